"""`eyas chat` (a REPL over the engine: streaming, KV reuse across turns, /reset, /stats, /exit, a
speed and tau line per reply) and the CLI's small things: --version, a prompt from stdin or a
file, --system."""

from __future__ import annotations

import io
import json
import re

import pytest

import eyas
from eyas.cli import main
from tests.test_cli import one_thread_models, tiny  # noqa: F401  (fixtures: a tiny GGUF, one-thread models)

SUMMARY = re.compile(r"^\[(\d+) tokens, [\d.]+ tok/s, tau (?:[\d.]+|- \(plain decoding\)), (\d+) prompt tokens reused\]$")


def chat(tiny, monkeypatch, capsys, lines: list[str], *extra: str):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    assert main(["chat", "--model", tiny, "--max-tokens", "6", "--seed", "1", *extra]) == 0
    return capsys.readouterr()


def test_turns_reuse_the_conversation_and_report_speed_and_tau(tiny, monkeypatch, capsys):
    out = chat(tiny, monkeypatch, capsys, ["Hello there", "And more", "/stats", "/reset", "Again", "/exit",
                                           "never read"]).out
    summaries = [SUMMARY.match(line) for line in out.splitlines() if SUMMARY.match(line)]
    assert len(summaries) == 3
    reused = [int(m.group(2)) for m in summaries]
    assert reused[0] == 0 and reused[1] > 0  # the second turn extends the first: its KV is reused
    assert "[conversation reset]" in out
    assert re.search(r"^\[2 replies, \d+ tokens, [\d.]+ tok/s, tau", out, re.M)


def test_unknown_command_and_eof(tiny, monkeypatch, capsys):
    out = chat(tiny, monkeypatch, capsys, ["/help"]).out  # EOF ends the chat like /exit
    assert "unknown command /help" in out and "/reset" in out


def test_chat_sampling_defaults_to_the_models_recommendation(tiny, monkeypatch, capsys):
    err = chat(tiny, monkeypatch, capsys, ["/exit"]).err
    assert "temperature 1.0, top_p 0.9" in err  # the tiny model recommends nothing: CHAT_SAMPLING
    err = chat(tiny, monkeypatch, capsys, ["/exit"], "--temperature", "0").err
    assert "temperature 0.0" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"eyas {eyas.__version__}"


def test_prompt_from_stdin_and_file_equals_the_argument(tiny, monkeypatch, capsys, tmp_path):
    base = ["--model", tiny, "--max-tokens", "5", "--json"]
    assert main(["generate", "Hello world", *base]) == 0
    want = json.loads(capsys.readouterr().out)["tokens"]
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello world"))
    assert main(["generate", "-", *base]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == want
    (tmp_path / "p.txt").write_text("Hello world", encoding="utf-8")
    assert main(["generate", "--prompt-file", str(tmp_path / "p.txt"), *base]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == want
    for option in ("-p", "--prompt"):  # the option form llama.cpp's CLI uses
        assert main(["generate", option, "Hello world", *base]) == 0
        assert json.loads(capsys.readouterr().out)["tokens"] == want


def test_prompt_errors_are_messages(tiny, capsys, tmp_path):
    assert main(["generate", "--model", tiny]) == 2
    assert "no prompt" in capsys.readouterr().err
    assert main(["generate", "x", "--prompt-file", str(tmp_path / "p.txt"), "--model", tiny]) == 2
    assert "give the prompt once" in capsys.readouterr().err
    assert main(["generate", "x", "-p", "y", "--model", tiny]) == 2
    assert "give the prompt once" in capsys.readouterr().err
    assert main(["generate", "--prompt-file", str(tmp_path / "missing.txt"), "--model", tiny]) == 2
    assert "cannot read --prompt-file" in capsys.readouterr().err


def test_system_message_goes_through_the_chat_template(tiny, capsys):
    base = ["generate", "hi", "--model", tiny, "--max-tokens", "2", "--json"]
    assert main([*base, "--chat"]) == 0
    plain_chat = json.loads(capsys.readouterr().out)["metrics"]["num_prompt_tokens"]
    assert main([*base, "--system", "You are a pirate who answers in rhymes."]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["num_prompt_tokens"] > plain_chat
