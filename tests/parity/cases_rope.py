"""RoPE (NeoX and interleaved, partial rotary, scaled inverse frequencies) against numpy."""

import numpy as np

from eyas import _core
from tests.parity import ParityCase


def inv_freq_for(rot_dim, theta=10000.0, factor=1.0):
    return (1.0 / (theta ** (np.arange(0, rot_dim, 2, dtype=np.float64) / rot_dim)) / factor).astype(np.float32)


def rope_ref(x, pos, inv_freq, style, rot_dim):
    # Angles in float32 as Hugging Face computes them; cos/sin and the rotation in float64.
    angle = pos.astype(np.float32)[:, None] * inv_freq[None, :]
    c = np.cos(angle.astype(np.float64))[:, None, :]
    s = np.sin(angle.astype(np.float64))[:, None, :]
    y = x.astype(np.float64).copy()
    half = rot_dim // 2
    if style == "neox":
        i0, i1 = np.arange(half), np.arange(half) + half
    else:
        i0, i1 = np.arange(half) * 2, np.arange(half) * 2 + 1
    x0, x1 = y[..., i0].copy(), y[..., i1].copy()
    y[..., i0] = x0 * c - x1 * s
    y[..., i1] = x1 * c + x0 * s
    return y.astype(np.float32)


def _case(t, h, d, rot_dim, style, max_pos=4096, factor=1.0, in_place=False):
    st = getattr(_core.ops.RopeStyle, style)

    def make(rng):
        return {"x": rng.standard_normal((t, h, d), dtype=np.float32),
                "pos": rng.integers(0, max_pos, t).astype(np.int32), "f": inv_freq_for(rot_dim, factor=factor)}

    def run(a):
        if not in_place:
            return _core.ops.rope(a["x"], a["pos"], a["f"], st)
        x = a["x"].copy()
        _core.ops.rope(x, a["pos"], a["f"], st, out=x)
        return x

    label = f"{style}-t{t}-h{h}-d{d}-r{rot_dim}" + ("-inplace" if in_place else "") + (f"-x{factor}" if factor != 1 else "")
    return ParityCase("rope", label, make, run, lambda a: rope_ref(a["x"], a["pos"], a["f"], style, rot_dim),
                      tol="f32")


CASES = [
    _case(1, 9, 64, 64, "neox"),
    _case(7, 3, 64, 64, "neox", in_place=True),
    _case(5, 4, 128, 64, "neox"),  # partial rotary: dims 64.. pass through
    _case(6, 2, 64, 64, "interleaved"),
    _case(3, 2, 96, 32, "interleaved", in_place=True),
    _case(33, 2, 256, 256, "neox", max_pos=40000, factor=8.0),
]
