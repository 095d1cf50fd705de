"""The generation loop and the Python API on a tiny random model: cache use, stops, metrics, errors."""

from __future__ import annotations

import numpy as np
import pytest

import eyas.api as api
from eyas.generation import Generation, plain_steps
from eyas.sampling import SamplingParams
from tests.fixtures import backend, tiny_models


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return tiny_models.random_llama_gguf(tmp_path_factory.mktemp("gen") / "tiny.gguf")


@pytest.fixture
def model(tiny_path, monkeypatch):
    monkeypatch.setattr(api, "make_transformer", lambda spec, w, max_context, aux_layers, kv_dtype="f32":
                        backend.make_model(spec, w, max_context=max_context, aux_layers=aux_layers))
    return api.load(str(tiny_path), drafter="none", max_context=64)


def _greedy_from_scratch(m, prompt_ids, n):
    """Greedy tokens recomputed with a full forward over the whole sequence at every step (no cache reuse)."""
    ref = backend.make_model(m.spec, m.loaded.weights, max_context=64, reference=True)
    seq = list(prompt_ids)
    for _ in range(n):
        ref.reset()
        seq.append(int(np.argmax(ref.forward(np.array(seq, np.int32), logits="last")["logits"][-1])))
    return seq[len(prompt_ids):]


def test_greedy_uses_the_cache_correctly(model):
    ids = model.encode_prompt("Hello world")
    model.loaded.tokenizer.eos_ids = []  # random weights: do not let an EOS cut the comparison short
    r = model.generate("Hello world", max_tokens=8)
    assert r.tokens == _greedy_from_scratch(model, ids, 8)
    assert r.finish_reason == "length" and r.text == model.tokenizer.decode(r.tokens)
    m = r.metrics
    assert m["num_prompt_tokens"] == len(ids) and m["num_generated_tokens"] == 8
    assert m["prefill_tok_s"] > 0 and m["decode_tok_s"] > 0


def test_chunked_prefill_gives_identical_tokens(model):
    model.loaded.tokenizer.eos_ids = []
    ids = model.encode_prompt("The quick brown fox jumps over the lazy dog.")
    runs = []
    for chunk in (512, 3, 1):
        steps = plain_steps(model.transformer, ids, SamplingParams(), prefill_chunk=chunk)
        runs.append(Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=6).consume().tokens)
    assert runs[0] == runs[1] == runs[2]


def test_eos_stops_and_is_not_emitted(model):
    model.loaded.tokenizer.eos_ids = []
    free = model.generate("Hello", max_tokens=6).tokens
    model.loaded.tokenizer.eos_ids = [free[3]]
    r = model.generate("Hello", max_tokens=6)
    assert r.finish_reason == "eos" and r.tokens == free[: free.index(free[3])]


def test_stop_strings_and_streaming(model):
    model.loaded.tokenizer.eos_ids = []
    full = model.generate("Hello", max_tokens=12)
    assert len(full.text) >= 4
    stop = full.text[2:4]
    g = model.generate("Hello", max_tokens=12, stop=[stop], stream=True)
    pieces = list(g)
    assert "".join(pieces) == g.result.text == full.text[: full.text.find(stop)]
    assert g.result.finish_reason == "stop"


def test_seeded_sampling_is_deterministic(model):
    model.loaded.tokenizer.eos_ids = []
    kw = dict(max_tokens=10, temperature=1.0, top_p=0.9, top_k=50, seed=5)
    a, b = model.generate("Hi", **kw), model.generate("Hi", **kw)
    assert a.tokens == b.tokens
    c = model.generate("Hi", **dict(kw, seed=6))
    greedy = model.generate("Hi", max_tokens=10)
    assert a.tokens != c.tokens or a.tokens != greedy.tokens


def test_chat_prompt_uses_the_template(model):
    ids = model.encode_prompt("hi", chat=True)
    assert model.tokenizer.decode(ids, skip_special=False) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_errors(model):
    with pytest.raises(ValueError, match=r"\[generate\] prompt \(\d+ tokens\) \+ max_tokens \(60\) exceeds max_context \(64\)"):
        model.generate("a long enough prompt here", max_tokens=60)
    with pytest.raises(ValueError, match="max_tokens"):
        model.generate("x", max_tokens=0)
    with pytest.raises(ValueError, match="empty"):
        model.generate("", max_tokens=2)
    with pytest.raises(ValueError, match="stop"):
        model.generate("x", stop=[1])
    with pytest.raises(ValueError, match=r"\[sampling\] top_p"):
        model.generate("x", top_p=2.0)
    with pytest.raises(ValueError, match=r"\[generate\] prompt must be a str"):
        model.generate(["not", "chat"])
    with pytest.raises(ValueError, match=r"\[load\] max_context"):
        api.load("unused", max_context=0)
    with pytest.raises(ValueError, match=r"\[load\] threads"):
        api.load("unused", threads=0)
