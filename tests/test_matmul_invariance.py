"""Batch invariance of matmul (DESIGN §3.1), bit-exact: a row's output never depends on the
number of rows in the call, the thread count or the instruction-set path; plus error paths."""

import numpy as np
import pytest

from eyas import _core
from tests import quant_ref as qr

ROWS = (1, 2, 7, 32, 128)


def _problem(wtype, seed=0):
    rng = np.random.default_rng(seed)
    k = qr.edge_k(wtype)
    n = 37  # odd, more than two 16-column tiles: both threads get columns
    x = rng.standard_normal((max(ROWS), k), dtype=np.float32)
    x[3] *= 1e-3  # rows of very different magnitude share one call
    return x, qr.random_weights(rng, wtype, n, k), n, k


@pytest.fixture
def threads():
    saved = _core.get_num_threads()
    yield
    _core.set_num_threads(saved)


@pytest.fixture
def isa():
    saved = _core.ops.get_isa()
    yield
    _core.ops.set_isa(saved)


@pytest.mark.parametrize("wtype", qr.ALL_TYPES)
def test_rows_independent_of_batch_and_threads(wtype, threads):
    x, w, n, k = _problem(wtype)
    _core.set_num_threads(1)
    full = _core.ops.matmul(x, w, wtype, (n, k))
    assert np.all(np.isfinite(full))
    for nt in (1, 2, 16):  # 16: more threads than column groups (n = 37: two groups and a tail)
        _core.set_num_threads(nt)
        for t in ROWS:
            y = _core.ops.matmul(x[:t], w, wtype, (n, k))
            assert np.array_equal(y, full[:t]), f"{wtype}: T={t}, threads={nt} differs from T={max(ROWS)}"
        for r in (0, 3, 77):  # a row alone equals the same row inside the batch
            assert np.array_equal(_core.ops.matmul(x[r:r + 1], w, wtype, (n, k)), full[r:r + 1])


@pytest.mark.parametrize("wtype", qr.ALL_TYPES)
def test_columns_independent_of_the_other_weight_rows(wtype, threads):
    # Fused weights (q|k|v, gate|up: one matmul over their rows stacked, in the models and the drafter)
    # give each part's bits, whether a part's columns fall in whole 16-column groups or in a tail.
    rng = np.random.default_rng(1)
    k = qr.edge_k(wtype)
    widths = (48, 21, 16)
    parts = [qr.random_weights(rng, wtype, n, k) for n in widths]
    fused = np.concatenate(parts, axis=0)
    x = rng.standard_normal((9, k), dtype=np.float32)
    for nt in (1, 2):
        _core.set_num_threads(nt)
        for t in (1, 2, 4, 9):
            for _ in range(2):  # the second call of a Q8_0 weight runs its repack
                whole = _core.ops.matmul(x[:t], fused, wtype, (sum(widths), k))
                each = [_core.ops.matmul(x[:t], w, wtype, (n, k)) for w, n in zip(parts, widths)]
                assert np.array_equal(whole, np.concatenate(each, axis=1)), f"{wtype}: T={t}, threads={nt}"


@pytest.mark.parametrize("wtype", qr.ALL_TYPES)
def test_few_row_passes_over_many_column_groups(wtype, threads):
    # 1-4 rows walk several column groups at once (4 streams a thread up to 3 rows, 2 at 4 rows on the
    # AVX-512 pack), with the groups left over after the streams one at a time: 11 groups and a tail.
    rng = np.random.default_rng(2)
    k, n = qr.edge_k(wtype), 16 * 11 + 5
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((5, k), dtype=np.float32)
    for nt in (1, 2):
        _core.set_num_threads(nt)
        rows = [_core.ops.matmul(x[r:r + 1], w, wtype, (n, k)) for r in range(5)]
        for t in (2, 3, 4, 5):
            for _ in range(2):  # the second call of a Q8_0 weight runs its repack
                y = _core.ops.matmul(x[:t], w, wtype, (n, k))
                assert np.array_equal(y, np.concatenate(rows[:t])), f"{wtype}: T={t}, threads={nt}"


@pytest.mark.parametrize("wtype", qr.ALL_TYPES)
def test_every_isa_gives_identical_bits(wtype, isa, threads):
    x, w, n, k = _problem(wtype, seed=1)
    _core.set_num_threads(2)
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (n, k))
    want1 = _core.ops.matmul(x[5:6], w, wtype, (n, k))
    for name in _core.ops.available_isas():
        _core.ops.set_isa(name)
        assert _core.ops.get_isa() == name
        for t in ROWS:
            assert np.array_equal(_core.ops.matmul(x[:t], w, wtype, (n, k)), want[:t]), f"{wtype}: {name} T={t}"
        assert np.array_equal(_core.ops.matmul(x[5:6], w, wtype, (n, k)), want1), f"{wtype}: {name} T=1"


@pytest.mark.parametrize("wtype", qr.LEGACY_TYPES + qr.K_TYPES)
@pytest.mark.parametrize("blocks", [1, 2, 3, 5, 7])
def test_isas_agree_on_short_rows(wtype, blocks, isa):
    # Rows whose block count is not a multiple of the SIMD step (tail handling), N < one tile.
    k = blocks * qr.BLOCK[wtype][0]
    rng = np.random.default_rng(blocks)
    x, w = rng.standard_normal((6, k), dtype=np.float32), qr.random_weights(rng, wtype, 5, k)
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, wtype, (5, k))
    for name in _core.ops.available_isas():
        _core.ops.set_isa(name)
        assert np.array_equal(_core.ops.matmul(x, w, wtype, (5, k)), want), f"{wtype} {name} K={k}"
        assert np.array_equal(_core.ops.matmul(x[2:3], w, wtype, (5, k)), want[2:3]), f"{wtype} {name} K={k} T=1"


def test_q8_0_extreme_bytes_exact(isa):
    # Weights of -128 and activations at +-127 stress the integer tricks of the SIMD paths.
    k, n = 128, 20
    w = qr.random_weights(np.random.default_rng(2), "Q8_0", n, k).reshape(-1, 34)
    w[:, 2:] = np.where(np.arange(32) % 2 == 0, 0x80, 0x7F).astype(np.uint8)
    w = w.reshape(n, -1)
    x = np.tile(np.array([1.0, -1.0], np.float32), (3, k // 2))
    _core.ops.set_isa("scalar")
    want = _core.ops.matmul(x, w, "Q8_0", (n, k))
    np.testing.assert_allclose(want, qr.matmul_ref(x, w, "Q8_0", n, k), rtol=1e-5, atol=1e-6)
    for name in _core.ops.available_isas():
        _core.ops.set_isa(name)
        assert np.array_equal(_core.ops.matmul(x, w, "Q8_0", (n, k)), want), name


def test_set_isa_rejects_unknown():
    with pytest.raises(ValueError, match=r"\[set_isa\]"):
        _core.ops.set_isa("sse9")
    assert "scalar" in _core.ops.available_isas()


def test_dtype_enum_matches_ggml_ids():
    assert int(_core.DType.Q4_1) == 3 and int(_core.DType.Q8_0) == 8 and int(_core.DType.Q6_K) == 14
    x = np.ones((1, 32), np.float32)
    w = qr.random_weights(np.random.default_rng(3), "Q4_1", 2, 32)
    by_enum = _core.ops.matmul(x, w, _core.DType.Q4_1, (2, 32))
    assert np.array_equal(by_enum, _core.ops.matmul(x, w, 3, (2, 32)))
    assert np.array_equal(by_enum, _core.ops.matmul(x, w, "Q4_1", (2, 32)))


def _q41(n=4, k=64):
    return qr.random_weights(np.random.default_rng(4), "Q4_1", n, k)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: _core.ops.matmul(np.ones((1, 48), np.float32), np.zeros((4, 30), np.uint8), "Q4_1", (4, 48)),
         "not a multiple|block size"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float32), _q41()[:, :-1].copy(), "Q4_1", (4, 64)), "bytes"),
        (lambda: _core.ops.matmul(np.ones((0, 64), np.float32), _q41(), "Q4_1", (4, 64)), "at least one row"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float64), _q41(), "Q4_1", (4, 64)), "dtype"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.int32), _q41(), "Q4_1", (4, 64)), "F32"),
        (lambda: _core.ops.matmul(np.ones((1, 32), np.float32), _q41(), "Q4_1", (4, 64)), "dim 1"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float32), _q41(), "Q2_K", (4, 64)), "unknown weight type"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float32), _q41(), 24, (4, 64)), "unsupported weight type"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float32), _q41().astype(np.int8), "Q4_1", (4, 64)), "uint8"),
        (lambda: _core.ops.matmul(np.ones(64, np.float32), _q41(), "Q4_1", (4, 64)), "2-D"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float32), _q41(), "Q4_1", (4, 64), out=np.zeros((1, 5), np.float32)),
         "dim 1"),
        (lambda: _core.ops.matmul(np.ones((1, 64), np.float32), _q41(), "Q4_1", (4, 0)), "positive"),
    ],
)
def test_matmul_errors(call, message):
    with pytest.raises(ValueError, match=r"\[matmul\].*(" + message + ")"):
        call()


def test_matmul_refuses_read_only_out():
    out = np.zeros((1, 4), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"\[matmul\].*read-only"):
        _core.ops.matmul(np.ones((1, 64), np.float32), _q41(), "Q4_1", (4, 64), out=out)


@pytest.mark.parametrize("ids, message", [([0, 4], "outside"), ([-1], "outside"), ([2**31 - 1], "outside")])
def test_embedding_rejects_bad_ids(ids, message):
    with pytest.raises(ValueError, match=r"\[embedding\].*" + message):
        _core.ops.embedding(_q41(), "Q4_1", (4, 64), np.array(ids, np.int32))


def test_embedding_errors():
    with pytest.raises(ValueError, match=r"\[embedding\].*I32"):
        _core.ops.embedding(_q41(), "Q4_1", (4, 64), np.array([0], np.int64))
    with pytest.raises(ValueError, match=r"\[embedding\].*bytes"):
        _core.ops.embedding(_q41(), "Q4_1", (5, 64), np.array([0], np.int32))
    with pytest.raises(ValueError, match=r"\[embedding\].*block size"):
        _core.ops.embedding(np.zeros((4, 30), np.uint8), "Q4_1", (4, 48), np.array([0], np.int32))


def test_embedding_rows_match_matmul_with_one_hot():
    # A row of the table is what a one-hot activation multiplies out of it (float weights: exact).
    rng = np.random.default_rng(5)
    w = qr.random_weights(rng, "F32", 6, 16)
    emb = _core.ops.embedding(w, "F32", (6, 16), np.array([4], np.int32))
    wt = np.ascontiguousarray(qr.dequantize(w, "F32", 16).T)  # [16, 6]
    onehot = np.eye(6, dtype=np.float32)[4:5]
    y = _core.ops.matmul(onehot, wt.view(np.uint8).reshape(16, -1), "F32", (16, 6))
    assert np.array_equal(emb, y)
