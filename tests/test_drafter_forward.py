"""The C++ Eagle3Drafter against the numpy reference: tree expansion over its own KV cache,
rollback of tree slots, determinism, and input checks."""

import numpy as np
import pytest

from eyas import _core
from tests.parity.cases_speculative import DrafterRef, build, random_checkpoint, tiny_target


@pytest.fixture(scope="module")
def setup():
    spec, core, _ = tiny_target()
    cfg, t = random_checkpoint(5, spec, draft_vocab=64)
    return spec, build(spec, core, cfg, t)


def ingest_both(d, rng, T):
    Ht = d.spec["target_hidden_size"]
    aux = rng.standard_normal((T, 3 * Ht)).astype(np.float32)
    tokens = rng.integers(0, d.spec["vocab_size"], T).astype(np.int32)
    rt = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=256)
    rt.ingest(aux, tokens)
    ref = DrafterRef(d.spec, d.weights, d.d2t)
    ref.ingest(aux, tokens)
    return rt, ref


@pytest.mark.parametrize("policy", [(1, 4, 5), (2, 3, 6), (3, 4, 12), (4, 3, 16)])
def test_expand_matches_reference(setup, policy):
    _, d = setup
    rt, ref = ingest_both(d, np.random.default_rng(sum(policy)), 11)
    got = rt.expand(*policy)
    want = ref.expand(*policy)
    assert got["tokens"].tolist() == want["tokens"].tolist()
    assert got["parents"].tolist() == want["parents"].tolist()
    np.testing.assert_array_equal(got["mask"], want["mask"])
    np.testing.assert_allclose(got["scores"], want["scores"], atol=1e-4)
    # Every tree token is a target id reachable through d2t.
    assert set(got["tokens"][1:].tolist()) <= set(d.d2t.tolist())


def test_tree_slots_do_not_leak_into_committed_state(setup):
    _, d = setup
    rng = np.random.default_rng(1)
    rt, _ = ingest_both(d, rng, 6)
    Ht = d.spec["target_hidden_size"]
    aux = rng.standard_normal((3, 3 * Ht)).astype(np.float32)
    tokens = rng.integers(0, d.spec["vocab_size"], 3).astype(np.int32)
    # Expanding (which writes tree K/V after the committed prefix) must not change a later ingest.
    a = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=256)
    b = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=256)
    first_aux = rng.standard_normal((6, 3 * Ht)).astype(np.float32)
    first_tok = rng.integers(0, d.spec["vocab_size"], 6).astype(np.int32)
    a.ingest(first_aux, first_tok)
    b.ingest(first_aux, first_tok)
    a.expand(4, 4, 20)
    assert a.length == b.length == 6
    a.ingest(aux, tokens)
    b.ingest(aux, tokens)
    assert np.array_equal(a.last_logits, b.last_logits) and np.array_equal(a.last_hidden, b.last_hidden)
    assert np.array_equal(a.expand(3, 3, 10)["tokens"], b.expand(3, 3, 10)["tokens"])


def test_fused_matrices_are_views_of_the_loaders_arrays(setup):
    # The loader stores q|k|v and gate|up back to back, so a runtime's fused matmuls read those bytes (no
    # copy per runtime or fork); parts in separate buffers are copied together, with the same results.
    _, d = setup
    rng = np.random.default_rng(2)
    aux = rng.standard_normal((5, 3 * d.spec["target_hidden_size"])).astype(np.float32)
    tokens = rng.integers(0, d.spec["vocab_size"], 5).astype(np.int32)
    before = _core._fused_copy_bytes()
    a = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=64)
    assert _core._fused_copy_bytes() == before
    apart = {k: (np.array(v[0], copy=True), v[1], v[2]) for k, v in d.weights.items()}
    b = _core.speculative.Eagle3Drafter(d.spec, apart, d.d2t, max_context=64)
    assert _core._fused_copy_bytes() > before
    a.ingest(aux, tokens), b.ingest(aux, tokens)
    assert np.array_equal(a.last_logits, b.last_logits)
    ta, tb = a.expand(3, 4, 12), b.expand(3, 4, 12)
    assert ta["tokens"].tolist() == tb["tokens"].tolist() and np.array_equal(ta["scores"], tb["scores"])


def test_truncate_rolls_back(setup):
    _, d = setup
    rng = np.random.default_rng(2)
    Ht = d.spec["target_hidden_size"]
    aux = rng.standard_normal((9, 3 * Ht)).astype(np.float32)
    tokens = rng.integers(0, d.spec["vocab_size"], 9).astype(np.int32)
    a = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=64)
    a.ingest(aux, tokens)
    want = a.last_logits.copy()
    a.truncate(5)
    assert a.length == 5
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*ingest"):
        a.expand(2, 2, 4)  # the root belonged to the dropped suffix
    a.ingest(aux[5:], tokens[5:])
    assert np.array_equal(a.last_logits, want)
    a.reset()
    assert a.length == 0


def test_deterministic_across_threads(setup):
    _, d = setup
    rng = np.random.default_rng(3)
    Ht = d.spec["target_hidden_size"]
    aux = rng.standard_normal((20, 3 * Ht)).astype(np.float32)
    tokens = rng.integers(0, d.spec["vocab_size"], 20).astype(np.int32)
    outs = []
    threads = _core.get_num_threads()
    try:
        for n in (1, 2):
            _core.set_num_threads(n)
            a = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=64)
            a.ingest(aux, tokens)
            outs.append((a.last_logits.copy(), a.expand(3, 4, 12)["scores"]))
    finally:
        _core.set_num_threads(threads)
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


def test_bad_inputs(setup):
    _, d = setup
    a = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=8)
    Ht = d.spec["target_hidden_size"]
    ok_aux = np.zeros((2, 3 * Ht), np.float32)
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*aux"):
        a.ingest(np.zeros((2, 3 * Ht - 1), np.float32), np.zeros(2, np.int32))
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*tokens"):
        a.ingest(ok_aux, np.zeros(3, np.int32))
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*vocabulary"):
        a.ingest(ok_aux, np.array([0, 10**6], np.int32))
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*max_context"):
        a.ingest(np.zeros((9, 3 * Ht), np.float32), np.zeros(9, np.int32))
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*expand"):
        a.expand(2, 2, 4)
    a.ingest(ok_aux, np.zeros(2, np.int32))
    with pytest.raises(ValueError, match=r"\[expand_tree\].*top_k"):
        a.expand(0, 2, 4)
    w = dict(d.weights)
    w["attn_q"] = (np.zeros((4, 4), np.float32), 0, [4, 4])
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*attn_q"):
        _core.speculative.Eagle3Drafter(d.spec, w, d.d2t)
    del w["attn_q"]
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*missing"):
        _core.speculative.Eagle3Drafter(d.spec, w, d.d2t)
    with pytest.raises(ValueError, match=r"\[Eagle3Drafter\].*d2t"):
        _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t[:-1])
