"""A single long row's argmax (a 248K-token vocabulary's logits) is split between the threads; the answer
stays the first index of the maximum with NaN ignored, whatever the thread count and wherever the ties,
NaNs and all-NaN parts fall."""

import numpy as np
import pytest

from eyas import _core

V = 248320


@pytest.fixture
def threads():
    saved = _core.get_num_threads()
    yield
    _core.set_num_threads(saved)


def first_max(x: np.ndarray) -> int:
    ok = ~np.isnan(x)
    if not ok.any():
        return 0
    return int(np.flatnonzero(ok & (x == x[ok].max()))[0])


def rows():
    rng = np.random.default_rng(0)
    base = np.round(rng.standard_normal(V) * 2).astype(np.float32)  # many exact ties
    late_tie = base.copy()
    late_tie[[10, V - 5]] = 99.0  # the maximum in the first and the last part
    nan_head = base.copy()
    nan_head[: V // 2] = np.nan  # the first parts offer nothing
    nan_head[V - 1] = 50.0
    all_nan = np.full(V, np.nan, np.float32)
    neg_inf = np.full(V, -np.inf, np.float32)
    neg_inf[V // 3] = np.nan
    return {"ties": base, "late_tie": late_tie, "nan_head": nan_head, "all_nan": all_nan, "neg_inf": neg_inf}


@pytest.mark.parametrize("name", list(rows()))
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_split_argmax_is_the_first_maximum(threads, name, n):
    x = rows()[name]
    _core.set_num_threads(n)
    got = int(np.asarray(_core.ops.argmax(x[None, :]))[0])
    assert got == first_max(x), (name, n)
