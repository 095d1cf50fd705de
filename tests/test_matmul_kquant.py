"""The SIMD K-quant columns (Q4_K, Q5_K, Q6_K: on GGUF rows and on the repacks) give the scalar
table's bits at every row count, odd N, group tails and extreme bytes (the int16 pair sums of
vpmaddubsw at their largest)."""

import numpy as np
import pytest

from eyas import _core
from tests import quant_ref as qr

SIMD_ISAS = [i for i in _core.ops.available_isas() if i != "scalar"]


pytestmark = pytest.mark.usefixtures("restore_isa_and_threads")


def _check(wtype, w, x, n, k):
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (n, k))
    assert np.all(np.isfinite(want))
    for threads in (1, 2):
        _core.set_num_threads(threads)
        for isa in SIMD_ISAS:
            _core.ops.set_isa(isa)
            for t in range(1, len(x) + 1):
                got = _core.ops.matmul(x[:t], w, wtype, (n, k))
                assert np.array_equal(got, want[:t]), f"{wtype} N={n} K={k} T={t} threads={threads} isa={isa}"


@pytest.mark.skipif(not SIMD_ISAS, reason="no SIMD kernel table on this CPU")
@pytest.mark.parametrize("wtype", qr.K_TYPES)
@pytest.mark.parametrize("n, blocks", [(37, 5), (19, 4), (3, 1), (21, 7)])  # 4-block groups and their tails
def test_k_quant_simd_matches_scalar(wtype, n, blocks):
    rng = np.random.default_rng(n * blocks)
    k = 256 * blocks
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((40, k), dtype=np.float32)
    x[1] *= 1e-4
    x[7] = np.abs(x[7]) * 1e3  # one-signed row: per-16 sums near +-16 * 127
    x[30] = -np.abs(x[30])
    _check(wtype, w, x, n, k)


@pytest.mark.skipif(not SIMD_ISAS, reason="no SIMD kernel table on this CPU")
@pytest.mark.parametrize("wtype", qr.K_TYPES)
def test_k_quant_extreme_bytes_exact(wtype):
    # Every quant and scale byte at its largest (and Q6_K scales at -128): the pair sums of
    # quant x activation reach 2 * 63 * 127, still exact in int16.
    n, k = 5, 512
    w = qr.k_extreme_weights(wtype, n, k)
    x = qr.extreme_activations(26, k, mixed_from=9)  # 26 rows: the unpacked-group passes of many rows too
    x[3] = np.linspace(-1, 1, k, dtype=np.float32)
    _check(wtype, w, x, n, k)


PACK_ISAS = [i for i in ("avx2", "avx512", "amx") if i in _core.ops.available_isas()]
# The x86 Q6_K row passes map bytes with GFNI where the CPU has it, else with shifts and masks: both run here.
GFNI_MODES = (True, False) if _core.ops._gfni_in_use() else (False,)


@pytest.fixture
def each_gfni_mode():
    """Yields the GFNI settings to try; the default (on where the CPU has it) is restored after."""
    yield GFNI_MODES
    _core.ops._allow_gfni(True)


def test_the_gfni_knob_turns_the_unpack_off_and_on():
    on = _core.ops._gfni_in_use()
    _core.ops._allow_gfni(False)
    assert not _core.ops._gfni_in_use()
    _core.ops._allow_gfni(True)
    assert _core.ops._gfni_in_use() == on


@pytest.mark.skipif(not PACK_ISAS, reason="no AVX2 on this CPU")
@pytest.mark.parametrize("wtype", qr.K_TYPES)
@pytest.mark.parametrize("n, blocks", [(200, 8), (37, 5), (1000, 1), (16, 3)])  # streams + remainder, tail rows
def test_k_pack_path_matches_scalar(wtype, n, blocks, each_gfni_mode):
    # The kernels over the K-quant repacks (q4pack.h: AVX2, AVX-512 VNNI, AMX) at every T: the 16-column groups, the weight streams
    # of T <= 2, 4-row passes and their remainders, and rows past N // 16 * 16 on the GGUF path.
    rng = np.random.default_rng(n + blocks)
    k = 256 * blocks
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((40, k), dtype=np.float32)
    x[1] *= 1e-4
    x[7] = np.abs(x[7]) * 1e3
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (n, k))
    for gfni in each_gfni_mode:
        _core.ops._allow_gfni(gfni)
        for threads in (1, 2):
            _core.set_num_threads(threads)
            for isa in PACK_ISAS:
                _core.ops.set_isa(isa)
                for t in range(1, 41):
                    got = _core.ops._matmul_with_pack(x[:t], w, wtype, (n, k))
                    assert np.array_equal(got, want[:t]), \
                        f"{wtype} N={n} K={k} T={t} threads={threads} isa={isa} gfni={gfni}"


@pytest.mark.skipif(not PACK_ISAS, reason="no AVX2 on this CPU")
@pytest.mark.parametrize("wtype", qr.K_TYPES)
def test_k_pack_extreme_bytes_exact(wtype, each_gfni_mode):
    # The repack kernels with every quant and scale at its largest (Q6_K scales at -128 on every other
    # row): their int16 pair sums (AVX2: summed over 8 / 4 / 2 planes before widening) at the bound.
    n, k = 35, 512  # two packed 16-column groups and 3 columns on the GGUF path
    w = qr.k_extreme_weights(wtype, n, k)
    x = qr.extreme_activations(26, k, mixed_from=9)
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (n, k))
    for gfni in each_gfni_mode:
        _core.ops._allow_gfni(gfni)
        for isa in PACK_ISAS:
            _core.ops.set_isa(isa)
            for t in (1, 2, 3, 4, 5, 8, 17, 26):
                got = _core.ops._matmul_with_pack(x[:t], w, wtype, (n, k))
                assert np.array_equal(got, want[:t]), f"{wtype} T={t} isa={isa} gfni={gfni}"


AMX = "amx" in _core.ops.available_isas()


@pytest.mark.skipif(not AMX, reason="no AMX tiles on this CPU (the parity of its K-quant tile passes runs where they exist)")
@pytest.mark.parametrize("wtype", qr.K_TYPES)
@pytest.mark.parametrize("extreme", [False, True])
def test_k_pack_amx_tiles_match_scalar(wtype, extreme):
    # AMX tile passes over the K-quant packs (scales folded into the unpacked weights in pieces, two
    # 16-row groups a pass for Q4_K / Q5_K, then a single group, then VNNI rows) at every split of T;
    # Q6_K takes tiles from 128 rows.
    rng = np.random.default_rng(7)
    n, k = 53, 768  # three packed 16-column groups (so two threads split them) and 5 columns on the GGUF path
    w = qr.k_extreme_weights(wtype, n, k) if extreme else qr.random_weights(rng, wtype, n, k)
    x = qr.extreme_activations(160, k, mixed_from=40) if extreme else rng.standard_normal((160, k), dtype=np.float32)
    x[5] = np.abs(x[5]) * 1e3  # one-signed row: the largest activation sums
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (n, k))
    _core.ops.set_isa("amx")
    for threads in (1, 2):
        _core.set_num_threads(threads)
        for t in (16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 79, 80, 127, 128, 129, 144, 159, 160):
            got = _core.ops._matmul_with_pack(x[:t], w, wtype, (n, k))
            assert np.array_equal(got, want[:t]), f"{wtype} T={t} threads={threads} extreme={extreme}"
