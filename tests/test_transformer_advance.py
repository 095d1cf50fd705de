"""Transformer.advance: a round's verify, accept and commit (or a plain step and its draw) in one call gives
exactly what forward, speculative.accept and commit (or decode and speculative.sample) give one by one: the
same path, tokens, captured rows, rng state and committed cache. Bad input fails before anything runs."""

import numpy as np
import pytest
from eyas import _core
from tests.test_transformer_invariance import AUX, MODELS
from tests.test_transformer_reference import make_model, random_tree

SAMPLINGS = [dict(temperature=0.0), dict(temperature=0.8, top_p=0.9), dict(temperature=1.3, top_k=5)]


def twins(name="llama-q4_1"):
    """Two Transformers over one model's weights, each its own cache: one advances, one goes step by step."""
    spec, core, _ = make_model(5, **MODELS[name])
    dev = _core.Device("cpu", 2)
    return spec, [_core.Transformer(spec, core, max_context=96, aux_layers=AUX, device=dev) for _ in range(2)]


def step_by_step(t, tokens, parents, rng, sampling):
    """forward + accept + commit (a plain step: decode + sample), as the generator did before advance."""
    if len(tokens) == 1:
        out = t.decode(int(tokens[0]), logits="last", capture_aux=True)
        token = _core.speculative.sample(out["logits"][-1], rng=rng, **sampling)
        return np.array([0]), np.array([token]), out["aux"]
    depths = np.zeros(len(tokens), np.int32)
    mask = np.eye(len(tokens), dtype=np.uint8)
    for i in range(1, len(tokens)):
        depths[i] = depths[parents[i]] + 1
        mask[i] |= mask[parents[i]]
    out = t.forward(tokens, mask=mask, depths=depths, logits="all", capture_aux=True)
    r = _core.speculative.accept(out["logits"], tokens, parents, rng=rng, **sampling)
    t.commit(r["path"])
    return r["path"], r["tokens"], out["aux"][r["path"]]


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("sampling", SAMPLINGS, ids=["greedy", "top-p", "top-k"])
def test_advance_equals_forward_accept_commit(name, sampling):
    spec, (fused, steps) = twins(name)
    V = spec["vocab_size"]
    rng = np.random.default_rng(3)
    prompt = rng.integers(0, V, 9).astype(np.int32)
    for t in (fused, steps):
        t.prefill(prompt, logits="none")
    r_fused, r_steps = _core.speculative.Rng(7), _core.speculative.Rng(7)
    longest, last = 0, int(prompt[-1])
    for round_ in range(12):
        n = [1, 2, 4, 6][round_ % 4]
        if round_ % 3 == 0:  # a chain (advance runs it as a causal forward)
            parents = np.arange(-1, n - 1, dtype=np.int32)
        else:
            parents = random_tree(rng, n)[0].astype(np.int32)
        tokens = rng.integers(0, V, n).astype(np.int32)
        if round_ % 3 == 0 and n > 1:  # the chain drafts the target's greedy continuation, wrong from a random node on
            tokens[0] = last
            for i in range(1, n):
                tokens[i] = steps.decode(int(tokens[i - 1]), logits="argmax")["argmax"]
            steps.truncate(fused.length)
            tokens[int(rng.integers(1, n + 1)):] = rng.integers(0, V)
        got = fused.advance(tokens, parents, rng=r_fused, capture_aux=True, **sampling)
        path, toks, aux = step_by_step(steps, tokens, parents, r_steps, sampling)
        assert got["path"].tolist() == path.tolist() and got["tokens"].tolist() == toks.tolist(), round_
        assert np.array_equal(got["aux"].view(np.uint32), np.ascontiguousarray(aux).view(np.uint32)), round_
        assert r_fused.state == r_steps.state and fused.length == steps.length
        longest, last = max(longest, len(path)), int(toks[-1])
    assert longest >= 3  # drafted tokens were accepted, not only the bonus
    # the committed caches continue alike: the next plain step's logits have the same bits
    a = fused.decode(int(toks[-1]), logits="last")["logits"]
    b = steps.decode(int(toks[-1]), logits="last")["logits"]
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_a_chain_that_the_target_continues_is_accepted_whole():
    spec, (t, _) = twins()
    V = spec["vocab_size"]
    prompt = np.arange(1, 10, dtype=np.int32) % V
    t.prefill(prompt, logits="none")
    base = t.length
    greedy = [int(t.decode(int(prompt[-1]), logits="argmax")["argmax"])]  # the target's own continuation
    for _ in range(3):
        greedy.append(int(t.decode(greedy[-1], logits="argmax")["argmax"]))
    t.truncate(base)
    tokens = np.array([prompt[-1]] + greedy[:3], np.int32)
    got = t.advance(tokens, np.arange(-1, 3, dtype=np.int32))
    assert got["path"].tolist() == [0, 1, 2, 3] and got["tokens"].tolist() == greedy
    assert t.length == base + 4 and "aux" not in got


@pytest.mark.parametrize("sampling", SAMPLINGS, ids=["greedy", "top-p", "top-k"])
def test_a_plain_step_reports_the_rows_top_probability(sampling):
    _, (a, b) = twins()
    for t in (a, b):
        t.prefill(np.array([3, 4, 5], np.int32), logits="none")
    ra, rb = _core.speculative.Rng(1), _core.speculative.Rng(1)
    got = a.advance(np.array([6], np.int32), np.array([-1], np.int32), rng=ra, top=True, **sampling)
    row = b.decode(6, logits="last")["logits"][-1]
    token, top = _core.speculative.sample_with_top(row, rng=rb, **sampling)
    assert got["tokens"].tolist() == [token] and got["top"] == top and ra.state == rb.state


@pytest.mark.parametrize("tokens,parents,kw,message", [
    ([1, 2], [0, 0], {}, "parents\\[0\\] must be -1"),
    ([1, 2, 3], [-1, 0, 2], {}, "must be an earlier node"),
    ([1, 10_000], [-1, 0], {}, "outside the vocabulary"),
    ([1, 2], [-1, 0], dict(temperature=0.7), "needs an rng"),
    ([1, 2], [-1, 0], dict(top=True), "one-node tree"),
    ([1, 2], [-1, 0], dict(temperature=-1.0), "temperature"),
    ([1, 2], [-1], {}, "parents"),
])
def test_bad_input_fails_before_anything_runs(tokens, parents, kw, message):
    _, (t, _) = twins()
    t.prefill(np.array([3, 4, 5], np.int32), logits="none")
    before = t.decode(6, logits="last")["logits"]
    t.truncate(3)
    with pytest.raises(ValueError, match=message):
        t.advance(np.array(tokens, np.int32), np.array(parents, np.int32), **kw)
    assert t.length == 3
    assert np.array_equal(t.decode(6, logits="last")["logits"], before)


def test_arrays_must_be_int32():
    _, (t, _) = twins()
    with pytest.raises(ValueError, match="tokens must be I32"):
        t.advance(np.array([1, 2], np.int64), np.array([-1, 0], np.int32))
    with pytest.raises(ValueError, match="int32 numpy arrays"):
        t.advance([1, 2], [-1, 0])
