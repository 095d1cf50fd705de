import numpy as np

from eyas import _core
from tests import quant_ref as qr
from tests.parity import ParityCase

# (V, K, T): one row, repeated ids, long rows.
SHAPES = {"float": [(1, 1, 1), (9, 33, 5), (50, 576, 4)], "legacy": [(1, 32, 1), (9, 96, 5), (40, 1536, 7)],
          "k": [(1, 256, 1), (9, 512, 5), (12, 1536, 3)]}


def _case(wtype, v, k, t):
    def make(rng):
        return {"w": qr.random_weights(rng, wtype, v, k), "ids": rng.integers(0, v, size=t, dtype=np.int32)}

    def run(a):
        return _core.ops.embedding(a["w"], wtype, (v, k), a["ids"])

    # Same float operations as gguf's dequantizers: bit-identical.
    return ParityCase("embedding", f"{wtype}-{v}x{k}-T{t}", make, run,
                      lambda a: qr.dequantize(a["w"], wtype, k)[a["ids"]], tol="exact")


def _group(wtype):
    return "float" if wtype in qr.FLOAT_TYPES else ("k" if wtype in qr.K_TYPES else "legacy")


CASES = [_case(w, *s) for w in qr.ALL_TYPES for s in SHAPES[_group(w)]]
