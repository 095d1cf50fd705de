import numpy as np

from eyas import _core
from tests import quant_ref as qr
from tests.parity import ParityCase

# (T, N, K): T=1 and odd T, N of 1 / odd / beyond one 16-column tile, K of one block, a
# non-multiple of the 4-block SIMD step, and long rows.
LEGACY_SHAPES = [(1, 1, 32), (1, 7, 64), (3, 17, 160), (1, 64, 576), (5, 33, 1536), (19, 3, 96)]
K_SHAPES = [(1, 1, 256), (3, 17, 512), (1, 40, 1536), (9, 5, 768)]
FLOAT_SHAPES = [(1, 1, 1), (2, 3, 7), (1, 17, 33), (4, 9, 576), (3, 2, 1536)]


def _case(wtype, t, n, k):
    def make(rng):
        return {"x": rng.standard_normal((t, k), dtype=np.float32), "w": qr.random_weights(rng, wtype, n, k)}

    def run(a):
        return _core.ops.matmul(a["x"], a["w"], wtype, (n, k))

    tol = {"F32": "f32_reduce", "F16": "f32_reduce", "BF16": "f32_reduce"}.get(wtype, "quant")
    return ParityCase("matmul", f"{wtype}-{t}x{n}x{k}", make, run, lambda a: qr.matmul_ref(a["x"], a["w"], wtype, n, k),
                      tol=tol)


def _shapes(wtype):
    if wtype in qr.FLOAT_TYPES:
        return FLOAT_SHAPES
    return K_SHAPES if wtype in qr.K_TYPES else LEGACY_SHAPES


CASES = [_case(w, *s) for w in qr.ALL_TYPES for s in _shapes(w)]
