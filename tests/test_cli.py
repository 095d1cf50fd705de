"""`eyas generate`: streaming text, --json, errors as messages with exit code 2, subcommand discovery."""

from __future__ import annotations

import json

import pytest

import eyas.api as api
from eyas.cli import build_parser, main
from tests.fixtures import backend, tiny_models


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(tiny_models.random_llama_gguf(tmp_path_factory.mktemp("cli") / "tiny.gguf"))


@pytest.fixture(autouse=True)
def one_thread_models(monkeypatch):
    monkeypatch.setattr(api, "make_transformer", lambda spec, w, max_context, aux_layers, kv_dtype="f32":
                        backend.make_model(spec, w, max_context=max_context, aux_layers=aux_layers))


def test_generate_json(tiny, capsys):
    assert main(["generate", "Hello world", "--model", tiny, "--max-tokens", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"text", "tokens", "metrics"}
    assert 1 <= len(out["tokens"]) <= 5 or out["finish_reason"] == "eos"
    m = out["metrics"]
    assert m["num_generated_tokens"] == len(out["tokens"]) and m["num_prompt_tokens"] > 0
    assert {"prefill_tok_s", "decode_tok_s"} <= set(m)


def test_streamed_text_equals_json_text(tiny, capsys):
    args = ["generate", "The quick brown fox", "--model", tiny, "--max-tokens", "6", "--temperature", "0.8",
            "--seed", "3", "--top-k", "40", "--top-p", "0.95"]
    assert main(args) == 0
    streamed = capsys.readouterr()
    assert main(args + ["--json"]) == 0
    text = json.loads(capsys.readouterr().out)["text"]
    assert streamed.out == text + "\n"
    assert "tok/s" in streamed.err and "prompt:" in streamed.err


def test_chat_flag(tiny, capsys):
    assert main(["generate", "hi", "--model", tiny, "--chat", "--max-tokens", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["num_prompt_tokens"] > 5  # template tokens added


@pytest.mark.parametrize("args, message", [
    (["--max-tokens", "1000", "--max-context", "64"], "exceeds max_context"),
    (["--temperature", "-1"], "temperature"),
    (["--threads", "0"], "threads"),
    (["--drafter", "/nonexistent/drafter"], ""),
])
def test_errors_are_messages(tiny, capsys, args, message):
    assert main(["generate", "Hello", "--model", tiny, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("eyas: error: ") and message in err


def test_missing_model_file(tmp_path, capsys):
    assert main(["generate", "x", "--model", str(tmp_path / "nope.gguf")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_subcommands_are_discovered():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "generate" in sub.choices
    with pytest.raises(SystemExit):
        parser.parse_args(["generate", "--help"])


@pytest.mark.slow
def test_default_model_answers(capsys):
    from eyas.models.default import default_model_path

    try:
        default_model_path()
    except ValueError as e:
        pytest.skip(str(e))
    if not backend.have_runtime():
        pytest.skip("needs _core.Transformer")
    # A plain completion: the chat answer's first token is a near tie that Q8 activation rounding can flip.
    assert main(["generate", "The capital of France is", "--max-tokens", "4", "--json"]) == 0
    assert "Paris" in json.loads(capsys.readouterr().out)["text"]


def test_drafter_family_none_is_plain_decoding(tiny, capsys):
    args = ["generate", "Hello world", "--model", tiny, "--max-tokens", "5", "--json"]
    assert main(args + ["--drafter-family", "none"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "num_drafts" not in plain["metrics"]
    assert main(args + ["--drafter", "none", "--drafter-family", "eagle3"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == plain["tokens"]


@pytest.mark.parametrize("command", [["generate", "Hello"], ["bench", "--prompts", "p.jsonl"]])
def test_unknown_drafter_family_lists_the_choices(tiny, capsys, command):
    with pytest.raises(SystemExit) as e:
        main([*command, "--model", tiny, "--drafter-family", "medusa"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--drafter-family" in err and "'medusa'" in err
    assert all(f in err for f in ("eagle3", "auto", "parallel", "none"))


def test_load_rejects_an_unknown_drafter_family(tiny):
    choices = ", ".join(api.drafter_families())  # the registered families, then "none"
    assert choices.startswith("auto, eagle3, ") and choices.endswith(", parallel, none")
    with pytest.raises(ValueError, match=rf"\[load\] unknown drafter_family 'medusa'; choose one of {choices}$"):
        api.load(tiny, drafter_family="medusa")


def test_a_registered_family_reaches_the_generator(tiny, monkeypatch):
    """eyas.load hands (drafter, loaded model) to the family's factory; Model.generate runs the
    proposer it made without knowing its family, and greedy output stays the plain output."""
    from tests.test_speculative_proposer import register_family

    made = []
    register_family(monkeypatch, "random", seed=1, made=made)
    plain = api.load(tiny, drafter_family="none").generate("Hello world", max_tokens=12)
    m = api.load(tiny, drafter="my-drafter", drafter_family="random")
    assert made[0][0] == "my-drafter" and m.proposer is made[0][1]
    r = m.generate("Hello world", max_tokens=12, tree="3,2,5")
    assert r.tokens == plain.tokens and r.metrics["num_drafts"] >= 1


@pytest.mark.parametrize("command", [["generate", "--max-tok", "4", "hi"], ["bench", "--prompt", "p.jsonl"]])
def test_abbreviated_options_are_refused(tiny, capsys, command):
    """argparse would take `--max-tok` for `--max-tokens` and `bench --prompt` for `--prompts`: a typo
    or another tool's habit then means an option the user did not name."""
    with pytest.raises(SystemExit) as e:
        main([*command, "--model", tiny])
    assert e.value.code == 2  # argparse's usage error, before anything runs
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err or "required: --prompts" in err


def test_train_drafter_refuses_abbreviations_under_both_entry_points(capsys):
    """`eyas train-drafter` and `eyas.train.cli.main` (the GPU scripts' entry) parse alike."""
    from eyas.train.cli import main as train_main

    for run in (lambda argv: main(["train-drafter", *argv]), train_main):
        with pytest.raises(SystemExit) as e:
            run(["pack", "x", "--out", "y", "--ou", "z"])  # allowed, --ou would be --out and pack would run
        assert e.value.code == 2 and "unrecognized arguments: --ou z" in capsys.readouterr().err


def test_python_m_eyas_train_reports_bad_input_without_a_traceback(tmp_path):
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "eyas.train", "pack", str(tmp_path / "missing"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 2 and "error: [train]" in r.stderr and "Traceback" not in r.stderr, r.stderr
