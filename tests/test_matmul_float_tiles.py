"""Float weights (F32 / F16 / BF16) through the SIMD register tiles: every row count the tiles split
(1 row, 2-5 row tiles, the half-precision panel converted once from 32 rows, activation row blocks),
column counts that leave partial tiles, and reductions with and without a tail give exactly the
scalar definition's bits (16 fused multiply-add lanes folded 8/4/2/1, dot_generic.h)."""

import numpy as np
import pytest

from eyas import _core
from tests import quant_ref as qr

ROWS = (1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 70)
# 1000: a 6-column panel converts (6 x 1000 floats fit the 32 KB bound) and 64-row activation blocks
# split 70 rows; 2000 does not convert; 3000 splits the AVX2 tiles' 256 KB column blocks (20 F32
# columns); 15 / 33 end in a tail shorter than one 16-lane chunk.
KS = (15, 33, 576, 1000, 2000, 3000)
N = 23  # not a multiple of any tile's column count (8 for one row, 6 or 2 for more)


@pytest.fixture
def isa():
    saved = _core.ops.get_isa()
    yield
    _core.ops.set_isa(saved)


@pytest.fixture
def threads():
    saved = _core.get_num_threads()
    yield
    _core.set_num_threads(saved)


@pytest.mark.parametrize("wtype", qr.FLOAT_TYPES)
@pytest.mark.parametrize("k", KS)
def test_float_tiles_equal_the_scalar_definition(wtype, k, isa, threads):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((max(ROWS), k), dtype=np.float32)
    x[5] *= 1e4  # magnitudes far apart, so a changed operation order shows in the bits
    w = qr.random_weights(rng, wtype, N, k)
    _core.set_num_threads(2)
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (N, k))
    np.testing.assert_allclose(want, qr.matmul_ref(x, w, wtype, N, k), rtol=2e-4, atol=2e-3 * np.sqrt(k))
    for name in _core.ops.available_isas():
        _core.ops.set_isa(name)
        for t in ROWS:
            got = _core.ops.matmul(x[:t], w, wtype, (N, k))
            assert np.array_equal(got, want[:t]), f"{wtype} {name} K={k} T={t}"


def _weights(wtype, w32):
    """float32[n, k] (exactly representable in wtype) -> the wtype's bytes."""
    if wtype == "F16":
        w32 = w32.astype(np.float16)
    elif wtype == "BF16":
        w32 = (w32.view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(w32).view(np.uint8).reshape(w32.shape[0], -1)


@pytest.mark.parametrize("wtype", qr.FLOAT_TYPES)
@pytest.mark.parametrize("k", [17, 32])  # element 16 in the tail, or in a full chunk
def test_float_sums_are_fused(wtype, k, isa):
    # Lane 0 gets elements 0 and 16. With w[16] = 1 + e (e the type's step above 1) and x[16] = 1 + 2^-23,
    # the product 1 + e + 2^-23 + e 2^-23 needs more than float's 24 bits; element 0 puts
    # -(1 + e + 2^-23) in the lane first, so a fused multiply-add leaves exactly e 2^-23 and a rounded
    # product leaves 0. Every row-tile path is checked (the row repeated).
    e = {"F32": 2.0**-23, "F16": 2.0**-10, "BF16": 2.0**-7}[wtype]
    w32 = np.zeros((3, k), np.float32)
    w32[:, 0], w32[:, 16] = 1.0, 1.0 + e
    x = np.zeros((40, k), np.float32)
    x[:, 0], x[:, 16] = -(1.0 + e + 2.0**-23), 1.0 + 2.0**-23
    w = _weights(wtype, w32)
    for name in _core.ops.available_isas():
        _core.ops.set_isa(name)
        for t in (1, 2, 4, 5, 32, 40):
            got = _core.ops.matmul(x[:t], w, wtype, (3, k))
            assert np.all(got == np.float32(e * 2.0**-23)), f"{wtype} {name} T={t}: {got[:, 0]!r}"
