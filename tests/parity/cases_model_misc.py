"""Parity cases for the model helper ops: copy_cols, sigmoid_scale_rows, moe_route, moe_ffn."""

import numpy as np

from eyas import _core
from tests.parity import ParityCase


def _copy_cols_case(rows, nx, ny, x_col, y_col, n):
    def make(rng):
        return {"x": rng.standard_normal((rows, nx), dtype=np.float32),
                "y": rng.standard_normal((rows, ny), dtype=np.float32)}

    def ref(a):
        y = a["y"].copy()
        y[:, y_col:y_col + n] = a["x"][:, x_col:x_col + n]
        return y

    return ParityCase("copy_cols", f"{rows}x{nx}->{ny}@{y_col}+{n}", make,
                      lambda a: _core.ops.copy_cols(a["x"], x_col, a["y"].copy(), y_col, n), ref, tol="exact")


def _sigmoid_rows_case(rows, n):
    def make(rng):
        return {"x": rng.standard_normal((rows, n), dtype=np.float32),
                "g": (rng.standard_normal((rows, 1)) * 4).astype(np.float32)}

    def ref(a):
        return (a["x"].astype(np.float64) / (1 + np.exp(-a["g"].astype(np.float64)))).astype(np.float32)

    return ParityCase("sigmoid_scale_rows", f"{rows}x{n}", make,
                      lambda a: _core.ops.sigmoid_scale_rows(a["x"], a["g"]), ref, tol="f32")


def _softmax_topk(logits, k, norm):
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    idx = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    w = np.take_along_axis(p, idx, -1)
    if norm:
        w = w / w.sum(-1, keepdims=True)
    return idx.astype(np.int32), w


def _route_case(T, E, k, norm):
    def make(rng):
        # Distinct logits, so the expert order is unambiguous.
        return {"l": (rng.permutation(T * E).reshape(T, E) * 0.05).astype(np.float32)}

    def run(a):
        idx, w = _core.ops.moe_route(a["l"], k, norm)
        return idx, w

    def ref(a):
        idx, w = _softmax_topk(a["l"].astype(np.float64), k, norm)
        return idx, w.astype(np.float32)

    return ParityCase("moe_route", f"T{T}xE{E}k{k}{'n' if norm else ''}", make, run, ref, tol="f32")


def _moe_case(T, H, E, Ie, k, norm):
    def make(rng):
        return {"x": rng.standard_normal((T, H), dtype=np.float32),
                "l": (rng.permutation(T * E).reshape(T, E) * 0.1).astype(np.float32),
                "g": (rng.standard_normal((E, Ie, H)) * H ** -0.5).astype(np.float32),
                "u": (rng.standard_normal((E, Ie, H)) * H ** -0.5).astype(np.float32),
                "d": (rng.standard_normal((E, H, Ie)) * Ie ** -0.5).astype(np.float32)}

    def ref(a):
        x = a["x"].astype(np.float64)
        idx, w = _softmax_topk(a["l"].astype(np.float64), k, norm)
        out = np.zeros_like(x)
        for t in range(T):
            for e, we in zip(idx[t], w[t]):
                g, u = a["g"][e] @ x[t], a["u"][e] @ x[t]
                out[t] += we * (a["d"][e] @ (g / (1 + np.exp(-g)) * u))
        return out.astype(np.float32)

    return ParityCase("moe_ffn", f"T{T}xH{H}xE{E}xI{Ie}k{k}", make,
                      lambda a: _core.ops.moe_ffn(a["x"], a["l"], a["g"], a["u"], a["d"], k, norm), ref,
                      tol="f32_reduce")


CASES = (
    [_copy_cols_case(*c) for c in [(1, 4, 4, 0, 0, 4), (3, 10, 7, 2, 1, 5), (300, 64, 192, 0, 128, 64),
                                   (17, 32, 16, 16, 0, 16)]]
    + [_sigmoid_rows_case(r, n) for r, n in [(1, 1), (5, 33), (64, 576)]]
    + [_route_case(*c) for c in [(1, 4, 1, False), (7, 8, 2, True), (33, 64, 8, True), (5, 3, 3, False)]]
    + [_moe_case(*c) for c in [(1, 32, 4, 32, 2, True), (9, 64, 8, 32, 3, False), (20, 32, 3, 64, 1, True)]]
)
