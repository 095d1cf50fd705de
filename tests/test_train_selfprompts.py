"""The "self" prompt source (eyas.train.selfprompts): the target writes user requests from its chat
template's user-turn prefix. CPU only, on the tiny random Llama GGUF (ChatML template) of
tests/fixtures, plus the default model's template when it is installed."""

import json

import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")
pytest.importorskip("gguf")

from eyas.chat import ChatTemplate  # noqa: E402
from eyas.train import selfprompts as sp  # noqa: E402
from tests.fixtures import tiny_models  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from eyas.loaders import load_model

    path = tiny_models.random_llama_gguf(tmp_path_factory.mktemp("self") / "tiny.gguf")
    return path, load_model(str(path))


def test_prefix_is_the_templates_user_turn_prefix(tiny):
    _, lm = tiny
    tok, tpl = lm.tokenizer, lm.chat_template
    head, tail = sp.user_turn_split(tpl)
    assert (head, tail) == ("<|im_start|>user\n", "<|im_end|>\n")
    ids = sp.prefix_ids(tok, tpl)
    assert ids == tok.encode("<|im_start|>user\n", add_bos=False)
    # What generate later feeds for a written request starts with the same tokens.
    assert tpl.encode(tok, "Hello world")[: len(ids)] == ids
    assert tok.token_to_id("<|im_end|>") in sp.end_of_turn_ids(tok, tpl)


def test_prefix_keeps_a_default_system_prompt_and_ignores_plain_text_closers(tiny):
    _, lm = tiny
    tok = lm.tokenizer
    chatml_with_system = ChatTemplate(
        "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nBe kind.<|im_end|>\n' }}{% endif %}"
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
    assert sp.user_turn_split(chatml_with_system)[0] == "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\n"
    # A closer that is ordinary text gives no stop id of its own: only the end-of-sequence ids stop.
    inst = ChatTemplate("{% for m in messages %}{{ '[INST] ' + m['content'] + ' [/INST]' }}{% endfor %}")
    assert sp.user_turn_split(inst) == ("[INST] ", " [/INST]")
    assert sp.end_of_turn_ids(tok, inst) == list(tok.eos_ids)
    # A template that drops or repeats the user message cannot be cut.
    with pytest.raises(ValueError, match="exactly once"):
        sp.user_turn_split(ChatTemplate("{{ 'no messages here' }}"))


def test_default_model_prefix():
    from tests.fixtures.default_model import load_or_skip

    lm = load_or_skip()
    head, _ = sp.user_turn_split(lm.chat_template)
    assert head.startswith("<|im_start|>system\n") and head.endswith("<|im_end|>\n<|im_start|>user\n")
    assert lm.tokenizer.token_to_id("<|im_end|>") in sp.end_of_turn_ids(lm.tokenizer, lm.chat_template)


@pytest.mark.parametrize("text", [
    "Hello hello hello hello hello hello hello hello hello hello hello hello",
    "Tell me about cats. Tell me about cats. Tell me about cats. Tell me about cats.",
    "What is this???????????????",
    "Line one\nLine one\nLine one\nLine one\nLine two",
])
def test_degenerate_requests(text):
    assert sp.is_degenerate(text)


@pytest.mark.parametrize("text", [
    "Explain how fireflies make light, for a ten-year-old.",
    "Write a Python function that merges two sorted lists and returns the merged list without using sort.",
    "I'm planning a trip to Lisbon in May.\nWhat should I pack?\nAny food I must try?\nThanks!",
])
def test_ordinary_requests_pass(text):
    assert not sp.is_degenerate(text)


def test_clean_request_filters(tiny):
    _, lm = tiny
    tok = lm.tokenizer
    eot = tok.token_to_id("<|im_end|>")
    stops = [eot]
    enc = lambda s: tok.encode(s, add_bos=False)  # noqa: E731
    assert sp.clean_request(enc("  Hello world, how are you today?  ") + [eot], stops, tok) == "Hello world, how are you today?"
    assert sp.clean_request(enc("Hello world, how are you today?"), stops, tok) is None  # cut by the token limit
    assert sp.clean_request(enc("Hello!") + [eot], stops, tok) is None  # too short
    assert sp.clean_request([eot], stops, tok) is None  # empty
    inner = enc("Hello world<|im_start|>assistant\nhow are you today?")
    assert sp.clean_request(inner + [eot], stops, tok) is None  # a role marker inside
    assert sp.dedup_key(" Hello  World\n") == sp.dedup_key("hello world")


def test_self_prompts_feeds_the_prefix_and_keeps_distinct_finished_requests(tiny, monkeypatch):
    _, lm = tiny
    tok, tpl = lm.tokenizer, lm.chat_template
    eot = tok.token_to_id("<|im_end|>")
    enc = lambda s: tok.encode(s, add_bos=False)  # noqa: E731
    script = [enc("Hello world, how are you today?") + [eot],
              enc("hello   world, how are you today?") + [eot],  # duplicate up to case and spaces
              enc("The quick brown fox jumps over the lazy dog.") + [eot],
              enc("The quick brown fox jumps over"),  # unfinished
              enc("fox fox fox fox fox fox fox fox fox fox fox fox fox") + [eot]]  # degenerate
    calls = []

    def fake_generate(target, prompts, max_new, temps, **kw):
        calls.append((prompts, max_new, temps, kw))
        return script[: len(prompts)]

    monkeypatch.setattr("eyas.train.generate.generate_batch", fake_generate)
    target = type("T", (), {"embed": torch.zeros(1)})()
    logs = []
    rows = sp.self_prompts(target, tok, tpl, 5, batch=5, max_new=32, max_rounds=2, progress=False, log=logs.append)
    prompts, max_new, temps, kw = calls[0]
    assert prompts == [sp.prefix_ids(tok, tpl)] * 5 and max_new == 32 and temps == [1.0] * 5
    assert kw["top_p"] == 0.95 and eot in kw["stop_ids"]
    assert len(calls) == 2  # two rounds: only two requests are kept per round, the second's are duplicates
    assert rows == [sp.row("Hello world, how are you today?"), sp.row("The quick brown fox jumps over the lazy dog.")]
    assert "kept 2 of 10 samples (2 unfinished, 2 filtered, 4 duplicates)" in logs[0]


def test_cli_on_the_tiny_target_writes_well_formed_rows(tiny, tmp_path):
    from eyas.train.cli import main

    path, _ = tiny
    out = tmp_path / "self.jsonl"
    main(["self-prompts", "--gguf", str(path), "--n", "3", "--out", str(out), "--batch", "8", "--max-new", "12",
          "--max-rounds", "2", "--device", "cpu", "--seed", "1"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) <= 3  # a random model rarely ends a turn; whatever it finished is well formed
    for r in rows:
        assert set(r) == {"prompt", "chat", "kind", "source"}
        assert r["chat"] is True and r["kind"] == "self_chat" and r["source"] == "self" and r["prompt"].strip() == r["prompt"]
    assert len({sp.dedup_key(r["prompt"]) for r in rows}) == len(rows)


def test_generate_batch_stops_at_the_given_ids(tiny):
    from eyas.train.generate import generate_batch
    from eyas.train.target import TorchTarget

    _, lm = tiny
    t = TorchTarget.from_loaded(lm).eval()
    prompt = sp.prefix_ids(lm.tokenizer, lm.chat_template)
    free = generate_batch(t, [prompt], 6, [0.0], stop_ids=[-1])[0]  # an id never produced: runs to the limit
    assert len(free) == 6
    cut = generate_batch(t, [prompt], 6, [0.0], stop_ids=[free[2]])[0]
    assert cut == free[: free.index(free[2]) + 1]
