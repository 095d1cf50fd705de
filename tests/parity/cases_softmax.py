"""softmax / log-softmax (with temperature), argmax and top-k against numpy."""

import numpy as np

from eyas import _core
from tests.parity import ParityCase


def softmax_ref(x, temperature, log):
    z = (x.astype(np.float64) - x.max(-1, keepdims=True)) / temperature
    lse = np.log(np.exp(z).sum(-1, keepdims=True))
    return (z - lse if log else np.exp(z - lse)).astype(np.float32)


def topk_ref(x, k):
    # Stable sort of -x: descending values, ties keep the lower index first.
    idx = np.argsort(-x, axis=-1, kind="stable")[:, :k].astype(np.int32)
    return np.take_along_axis(x, idx, -1), idx


def _logits(rng, rows, n, ties):
    x = (rng.standard_normal((rows, n)) * 3).astype(np.float32)
    if ties:  # few distinct values: many exact ties, including at the maximum
        x = np.round(x).astype(np.float32)
    return x


def _softmax_case(rows, n, temperature=1.0, log=False):
    return ParityCase(
        "softmax", f"{rows}x{n}-t{temperature}" + ("-log" if log else ""),
        lambda rng: {"x": _logits(rng, rows, n, False)},
        lambda a: _core.ops.softmax(a["x"], temperature, log=log),
        lambda a: softmax_ref(a["x"], temperature, log), tol="f32")


def _argmax_case(rows, n, ties=False):
    return ParityCase("argmax", f"{rows}x{n}" + ("-ties" if ties else ""),
                      lambda rng: {"x": _logits(rng, rows, n, ties)},
                      lambda a: _core.ops.argmax(a["x"]), lambda a: a["x"].argmax(-1).astype(np.int32), tol="exact")


def _topk_case(rows, n, k, ties=False):
    return ParityCase("topk", f"{rows}x{n}-k{k}" + ("-ties" if ties else ""),
                      lambda rng: {"x": _logits(rng, rows, n, ties)},
                      lambda a: _core.ops.topk(a["x"], k), lambda a: topk_ref(a["x"], k), tol="exact")


CASES = [
    _softmax_case(1, 1),
    _softmax_case(3, 17),
    _softmax_case(2, 49152, temperature=0.7),
    _softmax_case(5, 1000, log=True),
    _softmax_case(1, 151936, temperature=1.3, log=True),
    _softmax_case(64, 257),
    _argmax_case(1, 1),
    _argmax_case(4, 33),
    _argmax_case(3, 49152),
    _argmax_case(8, 100, ties=True),
    _argmax_case(1, 248320),  # a row long enough to be split between the threads
    _argmax_case(1, 248320, ties=True),
    _topk_case(1, 5, 5),
    _topk_case(3, 100, 10, ties=True),
    _topk_case(2, 49152, 64),
    _topk_case(1, 151936, 64),
    _topk_case(16, 4000, 8, ties=True),
]
