"""The AMX tile layouts (multi-group passes, partial groups, narrow tails) give the scalar path's bits."""

import numpy as np
import pytest

from eyas import _core
from tests import quant_ref as qr

pytestmark = pytest.mark.skipif("amx" not in _core.ops.available_isas(), reason="no AMX on this CPU")


@pytest.fixture(autouse=True)
def _restore():
    isa, threads = _core.ops.get_isa(), _core.get_num_threads()
    yield
    _core.ops.set_isa(isa)
    _core.set_num_threads(threads)


@pytest.mark.parametrize("wtype", ["Q4_0", "Q4_1", "Q8_0"])
@pytest.mark.parametrize("n", [200, 48, 64])  # whole 48-column tile passes plus remainders on the VNNI path
def test_tile_paths_match_scalar(wtype, n):
    rng = np.random.default_rng(n)
    k = 576
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((17, k), dtype=np.float32)
    x[1] *= 1e-4
    for threads in (1, 2):
        _core.set_num_threads(threads)
        for t in (2, 3, 5, 8, 9, 16, 17):
            _core.ops.set_isa("scalar")
            want = _core.ops.matmul(x[:t], w, wtype, (n, k))
            _core.ops.set_isa("amx")
            got = _core.ops.matmul(x[:t], w, wtype, (n, k))
            assert np.array_equal(got, want), f"{wtype} n={n} T={t} threads={threads}"
