import numpy as np

from eyas import _core
from tests.parity import ParityCase


def rms_norm_ref(x, w, eps):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * w).astype(np.float32)


def _case(rows, dim):
    def make(rng):
        return {"x": rng.standard_normal((rows, dim), dtype=np.float32), "w": rng.standard_normal(dim, dtype=np.float32),
                "eps": 1e-5}

    return ParityCase("rms_norm", f"{rows}x{dim}", make, lambda a: _core.ops.rms_norm(a["x"], a["w"], a["eps"]),
                      lambda a: rms_norm_ref(a["x"], a["w"], a["eps"]), tol="f32")


CASES = [_case(r, d) for r, d in [(1, 1), (1, 7), (3, 16), (5, 33), (2, 576), (17, 1000), (128, 64)]]
