"""add (same shape and row broadcast), silu_mul (and over the halves of fused rows), sigmoid_mul, scale
against numpy."""

import numpy as np

from eyas import _core
from tests.parity import ParityCase


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


REFS = {
    "add": lambda a, b: a + b,
    "silu_mul": lambda g, u: g * _sigmoid(g) * u,
    "sigmoid_mul": lambda x, g: x * _sigmoid(g),
}


def _case(op, shape, bshape=None, wide=False):
    def make(rng):
        std = 12.0 if wide else 1.0  # wide: exp() saturates on both ends
        return {"a": (rng.standard_normal(shape) * std).astype(np.float32),
                "b": (rng.standard_normal(bshape or shape) * std).astype(np.float32)}

    def ref(a):
        return REFS[op](a["a"].astype(np.float64), a["b"].astype(np.float64)).astype(np.float32)

    label = "x".join(map(str, shape)) + ("-row" if bshape else "") + ("-wide" if wide else "")
    return ParityCase(op, label, make, lambda a: getattr(_core.ops, op)(a["a"], a["b"]), ref, tol="f32")


def _halves_case(rows, inter, wide=False):
    """silu_mul_halves against numpy, and bit-equal to silu_mul on the halves copied apart (what the
    fused FFN computed before it read the halves in place)."""
    def make(rng):
        return {"gu": (rng.standard_normal((rows, 2 * inter)) * (12.0 if wide else 1.0)).astype(np.float32)}

    def run(a):
        y = _core.ops.silu_mul_halves(a["gu"])
        apart = _core.ops.silu_mul(np.ascontiguousarray(a["gu"][:, :inter]), np.ascontiguousarray(a["gu"][:, inter:]))
        assert np.array_equal(y.view(np.int32), apart.view(np.int32)), "the halves in place differ from silu_mul"
        return y

    def ref(a):
        g = a["gu"][:, :inter].astype(np.float64)
        return (g * _sigmoid(g) * a["gu"][:, inter:].astype(np.float64)).astype(np.float32)

    return ParityCase("silu_mul_halves", f"{rows}x{inter}" + ("-wide" if wide else ""), make, run, ref, tol="f32")


def _scale_case(shape, s):
    return ParityCase("scale", "x".join(map(str, shape)), lambda rng: {"x": rng.standard_normal(shape, dtype=np.float32)},
                      lambda a: _core.ops.scale(a["x"], s), lambda a: a["x"] * np.float32(s), tol="exact")


CASES = [
    _case("add", (1, 7)),
    _case("add", (3, 5, 33)),
    _case("add", (300, 576)),  # large: split over threads
    _case("add", (4, 100), bshape=(100,)),
    _case("add", (129, 1000), bshape=(1000,)),
    _case("silu_mul", (1, 1)),
    _case("silu_mul", (3, 1536)),
    _case("silu_mul", (2, 77), wide=True),
    _case("silu_mul", (64, 1536)),
    _halves_case(1, 7),
    _halves_case(3, 77, wide=True),
    _halves_case(8, 1536),
    _halves_case(64, 1536),  # large: split over threads mid-row
    _case("sigmoid_mul", (5, 31)),
    _case("sigmoid_mul", (2, 129), wide=True),
    _scale_case((3, 17), 0.125),
    _scale_case((40, 1000), -3.5),
]
