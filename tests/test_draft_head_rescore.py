"""The draft head's rescoring (DrafterSpec::rescore_rows): a Q4_0 copy of the head scores the draft
vocabulary and the best rows of each are recomputed from the stored head. Its quantizer against gguf's,
the recomputed logits against the stored head's, the load-time policy, and bad specs."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType, quants

from eyas import _core
from eyas.drafters.eagle3 import HEAD_RESCORE_ROWS
from tests.parity.cases_speculative import build, random_checkpoint, tiny_target

SPEC, CORE, _ = tiny_target()  # hidden 64: two Q4_0 blocks a head row
VD = 64


def test_quantize_q4_0_matches_gguf():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 96)).astype(np.float32)
    x[1] = 0.0  # a zero block: scale 0, every nibble 8
    x[2, :32] = np.linspace(-1, 3, 32)  # the extreme is positive: the scale is negative
    x[3, 5] = -7.5  # a lone extreme
    x[4] *= 1e-6
    got = np.asarray(_core.ops.requantize_q4_0(x.view(np.uint8), "F32", list(x.shape)))
    want = quants.quantize(x, GGMLQuantizationType.Q4_0)
    assert got.shape == want.shape == (6, 3 * 18)
    np.testing.assert_array_equal(got, want)
    q8 = quants.quantize(x, GGMLQuantizationType.Q8_0)  # a stored head: dequantized first, then rounded to Q4_0
    want = quants.quantize(quants.dequantize(q8, GGMLQuantizationType.Q8_0), GGMLQuantizationType.Q4_0)
    np.testing.assert_array_equal(np.asarray(_core.ops.requantize_q4_0(q8, "Q8_0", list(x.shape))), want)


def test_quantize_q4_0_rejects_partial_blocks():
    with pytest.raises(ValueError, match="multiple of 32"):
        _core.ops.requantize_q4_0(np.zeros((2, 40), np.float32).view(np.uint8), "F32", [2, 40])


@pytest.fixture(scope="module")
def drafter():
    cfg, t = random_checkpoint(7, SPEC, draft_vocab=VD)
    return build(SPEC, CORE, cfg, t, weight_type="q8_0")


def runtime(d, rows, weights=None):
    return _core.speculative.Eagle3Drafter({**d.spec, "rescore_rows": rows}, weights or d.weights, d.d2t, max_context=64)


def ingest(rt, seed=0):
    rng = np.random.default_rng(seed)
    aux = rng.standard_normal((9, 3 * SPEC["hidden_size"])).astype(np.float32)
    rt.ingest(aux, rng.integers(0, SPEC["vocab_size"], 9).astype(np.int32))
    return np.asarray(rt.last_logits)


def test_default_policy_rescores_q8_0_heads_only(drafter):
    assert drafter.weights["output"][1] == int(GGMLQuantizationType.Q8_0)
    assert drafter.spec["rescore_rows"] == min(HEAD_RESCORE_ROWS, VD)
    cfg, t = random_checkpoint(7, SPEC, draft_vocab=VD)
    assert build(SPEC, CORE, cfg, t, weight_type="f32").spec["rescore_rows"] == 0  # "f32" stays exact


def test_the_loaders_copy_is_shared_and_equals_a_runtimes_own(drafter):
    """The loader makes the Q4_0 copy once (every runtime and fork reads it); without one a runtime makes
    its own, with the same bits."""
    coarse = drafter.weights["output_coarse"]
    assert coarse[1] == int(GGMLQuantizationType.Q4_0) and coarse[2] == [VD, SPEC["hidden_size"]]
    own = {k: v for k, v in drafter.weights.items() if k != "output_coarse"}
    a, b = ingest(runtime(drafter, 8)), ingest(runtime(drafter, 8, own))
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    bad = {**drafter.weights, "output_coarse": drafter.weights["output"]}  # Q8_0, not a Q4_0 copy
    with pytest.raises(ValueError, match="output_coarse"):
        runtime(drafter, 8, bad)


def test_rescored_rows_are_the_stored_heads_logits(drafter):
    every = ingest(runtime(drafter, VD))  # every logit recomputed from the Q8_0 head
    stored = ingest(runtime(drafter, 0))  # the Q8_0 matmul (activations quantized too)
    np.testing.assert_allclose(every, stored, atol=2e-2 * np.abs(stored).max())
    some = ingest(runtime(drafter, 8))
    exact = some == every
    assert exact.sum() == 8  # the 8 recomputed rows carry the stored head's values, bit for bit
    np.testing.assert_allclose(some, every, atol=0.2 * np.abs(every).max())  # the rest, the Q4_0 copy's
    assert set(np.argsort(-every)[:4]) <= set(np.flatnonzero(exact))  # the best of the head were recomputed


def test_rescored_logits_have_the_same_bits_on_every_simd_level(drafter):
    # The whole drafter row (its SIMD kernels, the coarse head, the rescored rows) on every SIMD level.
    levels = _core.ops._simd_levels()
    want = ingest(runtime(drafter, VD))
    try:
        for level in levels:
            _core.ops._cap_simd(level)
            assert np.array_equal(ingest(runtime(drafter, VD)).view(np.uint32), want.view(np.uint32)), level
    finally:
        _core.ops._cap_simd(levels[-1])


def dot16_reference(w, x):
    """The 16-lane definition in float64 arithmetic rounded once per step: lane i % 16 takes
    round32(w[i] * x[i] + lane) in i order (a float32 product is exact in float64), then the lanes fold
    l += l + s for s = 8, 4, 2, 1."""
    lanes = np.zeros(16, np.float32)
    for i in range(len(x)):
        lanes[i % 16] = np.float32(np.float64(w[i]) * np.float64(x[i]) + np.float64(lanes[i % 16]))
    for s in (8, 4, 2, 1):
        lanes[:s] = lanes[:s] + lanes[s : 2 * s]
    return lanes[0]


@pytest.mark.parametrize("k", [1, 15, 16, 17, 64, 577])
def test_host_dot_of_rescored_rows_has_the_same_bits_on_every_simd_level(k):
    rng = np.random.default_rng(k)
    w = rng.standard_normal((4, k)).astype(np.float32)
    x = rng.standard_normal(k).astype(np.float32)
    want = np.array([dot16_reference(row, x) for row in w], np.float32)
    levels = _core.ops._simd_levels()
    try:
        for level in levels:
            _core.ops._cap_simd(level)
            got = np.asarray(_core.ops._dot16_rows(w, x))
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (level, got, want)
    finally:
        _core.ops._cap_simd(levels[-1])
    with pytest.raises(ValueError):
        _core.ops._dot16_rows(w, x[:-1] if k > 1 else np.zeros(2, np.float32))


def test_rescored_trees_equal_the_stored_heads(drafter):
    a, b = runtime(drafter, VD), runtime(drafter, 16)
    ingest(a, 3), ingest(b, 3)
    for policy in [(1, 4, 5), (3, 4, 12), (4, 3, 16)]:
        ta, tb = a.expand(*policy), b.expand(*policy)
        assert ta["tokens"].tolist() == tb["tokens"].tolist()
        assert ta["parents"].tolist() == tb["parents"].tolist()


@pytest.mark.parametrize("rows,msg", [(-1, "rescore_rows must be in"), (VD + 1, "rescore_rows must be in")])
def test_bad_rescore_rows(drafter, rows, msg):
    with pytest.raises(ValueError, match=msg):
        runtime(drafter, rows)


def test_rescore_needs_whole_q4_0_blocks():
    spec, core, _ = tiny_target(hidden=48, head_dim=12)
    cfg, t = random_checkpoint(1, spec, draft_vocab=VD)
    d = build(spec, core, cfg, t, weight_type="q8_0")
    assert d.spec["rescore_rows"] == 0  # the loader does not ask for it
    with pytest.raises(ValueError, match="multiple of 32"):
        _core.speculative.Eagle3Drafter({**d.spec, "rescore_rows": 4}, d.weights, d.d2t)
