"""Invariant 2 for tree attention, bit for bit (DESIGN §3):
a tree query == a T=1 decode over its visible keys laid out contiguously; results do not depend on
T, the thread count or the SIMD path; a causal prefill row == decode at that position."""

import numpy as np
import pytest

from eyas import _core
from tests.parity.cases_attention import make_inputs, visible_new

HEAD_DIMS = [64, 128, 256, 80]
GQA = [(3, 3), (9, 3), (8, 2)]  # (query heads, kv heads): ratios 1, 3, 4


def decode_over(q_row, k, v, slots, group_heads):
    """T=1 decode whose prefix holds exactly `slots` of k/v, contiguously, then the query's own slot."""
    *prefix, own = slots
    n_kv, _, d = k.shape
    cap = len(slots) + 2
    k2 = np.zeros((n_kv, cap, d), np.float32)
    v2 = np.zeros((n_kv, cap, d), np.float32)
    k2[:, :len(slots)] = k[:, slots]
    v2[:, :len(slots)] = v[:, slots]
    return _core.ops.attention(q_row[None], k2, v2, len(prefix))[0]


@pytest.mark.parametrize("d", HEAD_DIMS)
@pytest.mark.parametrize("heads", GQA, ids=lambda h: f"{h[0]}/{h[1]}")
def test_tree_query_equals_contiguous_decode(d, heads):
    rng = np.random.default_rng(d * 100 + heads[0])
    for prefix_len, n in [(0, 6), (37, 24), (130, 17)]:
        a = make_inputs(rng, n, heads[0], heads[1], d, prefix_len, "tree")
        out = _core.ops.attention(a["q"], a["k"], a["v"], prefix_len, a["mask"])
        for i in range(n):
            new = visible_new(a["mask"], n, n, i)
            assert new[-1] == i, "a tree node must see itself last"
            slots = list(range(prefix_len)) + [prefix_len + j for j in new]
            want = decode_over(a["q"][i], a["k"], a["v"], slots, heads)
            assert np.array_equal(out[i], want), f"query {i} (prefix {prefix_len}) differs from decode"


def test_drafter_frontier_equals_contiguous_decode():
    # Tn > Tq: the queries are the last Tq new slots; earlier tree depths are visible through the mask.
    rng = np.random.default_rng(5)
    n_new, n_q, prefix_len = 20, 6, 50
    a = make_inputs(rng, n_q, 9, 3, 64, prefix_len, "tree", n_new=n_new)
    out = _core.ops.attention(a["q"], a["k"], a["v"], prefix_len, a["mask"])
    for i in range(n_q):
        slots = list(range(prefix_len)) + [prefix_len + j for j in np.nonzero(a["mask"][i])[0]]
        assert np.array_equal(out[i], decode_over(a["q"][i], a["k"], a["v"], slots, (9, 3)))


@pytest.mark.parametrize("d", [64, 128])
def test_rows_independent_of_batch_threads_and_simd(d):
    rng = np.random.default_rng(d)
    n, prefix_len = 33, 70
    a = make_inputs(rng, n, 9, 3, d, prefix_len, "tree")
    args = (a["q"], a["k"], a["v"], prefix_len, a["mask"])
    threads = _core.get_num_threads()
    try:
        _core.set_num_threads(1)
        one = _core.ops.attention(*args)
        _core.set_num_threads(2)
        two = _core.ops.attention(*args)
        rows = np.concatenate([_core.ops.attention(a["q"][i:i + 1], a["k"], a["v"], prefix_len, a["mask"][i:i + 1])
                               for i in range(n)])
        per_level = {}
        for level in _core.ops._simd_levels():
            _core.ops._cap_simd(level)
            per_level[level] = _core.ops.attention(*args)
    finally:
        _core.ops._force_scalar(False)
        _core.set_num_threads(threads)
    assert np.array_equal(one, two), "1 vs 2 threads"
    assert np.array_equal(one, rows), "T=N vs T=1 calls"
    for level, got in per_level.items():
        assert np.array_equal(one, got), f"best SIMD path vs the {level} path"


@pytest.mark.parametrize("d", HEAD_DIMS)
def test_causal_prefill_row_equals_decode(d):
    rng = np.random.default_rng(d + 1)
    for prefix_len, n in [(0, 40), (19, 9)]:
        a = make_inputs(rng, n, 8, 2, d, prefix_len, "causal")
        pre = _core.ops.attention(a["q"], a["k"], a["v"], prefix_len)
        for i in range(n):
            dec = _core.ops.attention(a["q"][i:i + 1], a["k"], a["v"], prefix_len + i)
            assert np.array_equal(pre[i], dec[0]), f"row {i}"


def test_masked_keys_never_contribute():
    # Poisoning the invisible slots (inf/nan) must not change any output bit.
    rng = np.random.default_rng(11)
    n, prefix_len = 12, 20
    a = make_inputs(rng, n, 4, 2, 64, prefix_len, "tree")
    clean = _core.ops.attention(a["q"], a["k"], a["v"], prefix_len, a["mask"])
    k, v = a["k"].copy(), a["v"].copy()
    k[:, prefix_len + n:] = np.inf  # slots past the new ones
    v[:, prefix_len + n:] = np.nan
    for i in range(n):
        hidden = np.nonzero(a["mask"][i] == 0)[0]
        qi = a["q"][i:i + 1]
        kk, vv = k.copy(), v.copy()
        kk[:, prefix_len + hidden] = 1e30
        vv[:, prefix_len + hidden] = np.nan
        out = _core.ops.attention(qi, kk, vv, prefix_len, a["mask"][i:i + 1])
        assert np.array_equal(out[0], clean[i])


def test_commit_then_decode_matches_tree():
    # verify(tree) -> move accepted path into place -> decode sees the same keys: same bits.
    rng = np.random.default_rng(12)
    n, prefix_len = 10, 30
    a = make_inputs(rng, n, 9, 3, 64, prefix_len, "tree")
    tree = _core.ops.attention(a["q"], a["k"], a["v"], prefix_len, a["mask"])
    leaf = n - 1
    path = np.nonzero(a["mask"][leaf])[0]
    k, v = a["k"].copy(), a["v"].copy()
    for cache in (k, v):
        _core.ops.kv_move_rows(cache, (prefix_len + path).astype(np.int32), prefix_len)
    dec = _core.ops.attention(a["q"][leaf:leaf + 1], k, v, prefix_len + len(path) - 1)
    assert np.array_equal(dec[0], tree[leaf])


@pytest.mark.parametrize("schedule", [_core.Schedule.forward, _core.Schedule.reverse])
def test_kv_write_then_attention_in_one_encoder(schedule):
    rng = np.random.default_rng(13)
    n_kv, d, cap, prefix_len, n = 3, 64, 64, 20, 5
    k = rng.standard_normal((n_kv, cap, d), dtype=np.float32)
    v = rng.standard_normal((n_kv, cap, d), dtype=np.float32)
    k_new = rng.standard_normal((n, n_kv, d), dtype=np.float32)
    v_new = rng.standard_normal((n, n_kv, d), dtype=np.float32)
    q = rng.standard_normal((n, 9, d), dtype=np.float32)
    k_ref, v_ref = k.copy(), v.copy()
    _core.ops.kv_write(k_new, k_ref, prefix_len)
    _core.ops.kv_write(v_new, v_ref, prefix_len)
    want = _core.ops.attention(q, k_ref, v_ref, prefix_len)
    enc = _core.Encoder(schedule=schedule)
    _core.ops.kv_write(k_new, k, prefix_len, encoder=enc)
    _core.ops.kv_write(v_new, v, prefix_len, encoder=enc)
    out = _core.ops.attention(q, k, v, prefix_len, encoder=enc)
    enc.commit()
    assert list(enc.barrier_positions) == [2]
    assert np.array_equal(out, want)


# The kernels that share attention's exp(): same bits on the scalar and SIMD paths, and a row's bits do
# not depend on the other rows in the call.
SHARED_EXP_OPS = {
    "softmax": lambda x: _core.ops.softmax(x, 0.8),
    "log_softmax": lambda x: _core.ops.softmax(x, log=True),
    "silu_mul": lambda x: _core.ops.silu_mul(x, x[::-1].copy()),
    "sigmoid_mul": lambda x: _core.ops.sigmoid_mul(x[::-1].copy(), x),
    "topk": lambda x: np.concatenate([t.view(np.uint32) for t in _core.ops.topk(x, 7)], -1),
    "argmax": lambda x: _core.ops.argmax(x),
}


@pytest.mark.parametrize("name", list(SHARED_EXP_OPS))
def test_shared_exp_ops_scalar_equals_simd_and_rows_are_independent(name):
    fn = SHARED_EXP_OPS[name]
    x = (np.random.default_rng(3).standard_normal((6, 1003)) * 20).astype(np.float32)
    x[2, 5] = -np.inf
    simd = fn(x)
    try:
        for level in _core.ops._simd_levels():
            _core.ops._cap_simd(level)
            got = fn(x)
            assert np.array_equal(simd.view(np.uint32), got.view(np.uint32)), level  # bits, so NaN == NaN
    finally:
        _core.ops._force_scalar(False)
    if name not in ("silu_mul", "sigmoid_mul"):  # their second operand mixes rows
        assert np.array_equal(fn(x[4:5]), simd[4:5])


def test_exp_at_the_ends_of_its_range_scalar_equals_simd():
    # The SIMD exp() skips its clamps when all 16 lanes lie in [ln 2^-126, 88]: 16-lane blocks wholly at
    # the range's ends (that path) and with one lane just past them (the clamped path) must keep the
    # scalar bits. sigmoid_mul(x, g) takes exp(-g).
    hi, lo = np.float32(88.0), np.float32(-87.33654475)
    ends = np.array([hi, np.nextafter(hi, np.float32(0)), lo, np.nextafter(lo, np.float32(0)), np.float32(0),
                     np.float32(-1e-30), np.float32(3.5), np.float32(-60.25)], np.float32)
    past = np.array([np.nextafter(hi, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf)), np.float32(np.inf),
                     np.float32(-np.inf), np.float32(np.nan), np.float32(1e30)], np.float32)
    rng = np.random.default_rng(5)
    blocks = [rng.choice(ends, 16) for _ in range(40)]
    for bad in past:  # one lane out of range in an otherwise in-range block
        b = rng.choice(ends, 16)
        b[rng.integers(16)] = bad
        blocks.append(b)
    e = np.concatenate(blocks).astype(np.float32)[None, :]  # exp's argument, [1, 16 * blocks]
    x = rng.standard_normal(e.shape).astype(np.float32)
    simd = _core.ops.sigmoid_mul(x, -e)
    try:
        _core.ops._force_scalar(True)
        scalar = _core.ops.sigmoid_mul(x, -e)
    finally:
        _core.ops._force_scalar(False)
    assert np.array_equal(simd.view(np.uint32), scalar.view(np.uint32))


@pytest.mark.parametrize("heads", [(9, 3), (8, 2), (3, 3), (16, 2)], ids=lambda h: f"{h[0]}/{h[1]}")
@pytest.mark.parametrize("d", [64, 80, 128])
@pytest.mark.parametrize("half", [False, True], ids=["f32", "f16"])
def test_long_decode_split_equals_one_thread_and_scalar(heads, d, half):
    # A decode over >= 512 contiguous keys on 2 threads splits scores by keys and V sums by columns;
    # its bits must equal the one-thread tile path, the scalar reference path and a masked call
    # (which takes the tile path).
    rng = np.random.default_rng(d + heads[0])
    threads = _core.get_num_threads()
    try:
        for prefix_len in (511, 700, 1537):
            a = make_inputs(rng, 1, heads[0], heads[1], d, prefix_len, "causal")
            k, v = (a["k"].astype(np.float16), a["v"].astype(np.float16)) if half else (a["k"], a["v"])
            _core.set_num_threads(2)
            split = _core.ops.attention(a["q"], k, v, prefix_len)
            _core.set_num_threads(1)
            tile = _core.ops.attention(a["q"], k, v, prefix_len)
            _core.ops._force_scalar(True)
            scalar = _core.ops.attention(a["q"], k, v, prefix_len)
            _core.ops._force_scalar(False)
            _core.set_num_threads(2)
            masked = _core.ops.attention(a["q"], k, v, prefix_len, np.ones((1, 1), np.uint8))
            assert np.array_equal(split, tile), f"prefix {prefix_len}: 2 vs 1 thread"
            assert np.array_equal(split, scalar), f"prefix {prefix_len}: SIMD vs scalar"
            assert np.array_equal(split, masked), f"prefix {prefix_len}: plain vs masked call"
    finally:
        _core.ops._force_scalar(False)
        _core.set_num_threads(threads)


@pytest.mark.parametrize("heads", [(9, 3), (8, 2), (16, 2)], ids=lambda h: f"{h[0]}/{h[1]}")
@pytest.mark.parametrize("d", [64, 80])
@pytest.mark.parametrize("half", [False, True], ids=["f32", "f16"])
def test_long_tree_verify_split_equals_tile_scalar_and_decode(heads, d, half):
    # A small tree over >= 512 committed keys on 2 threads takes the key/column split too (with each
    # node's own tail of tree keys; from 8 items per kv head the shared keys' scores come from K blocks
    # transposed on the fly); every row equals the one-thread tile path, the scalar path, and a T=1
    # decode over the node's visible keys laid out contiguously.
    rng = np.random.default_rng(heads[0] * 7 + half + d)
    threads = _core.get_num_threads()
    try:
        for prefix_len, n, n_new in [(512, 2, 2), (777, 5, 5), (1501, 15, 15), (600, 4, 9)]:
            a = make_inputs(rng, n, heads[0], heads[1], d, prefix_len, "tree", n_new=n_new)
            k, v = (a["k"].astype(np.float16), a["v"].astype(np.float16)) if half else (a["k"], a["v"])
            args = (a["q"], k, v, prefix_len, a["mask"])
            _core.set_num_threads(2)
            split = _core.ops.attention(*args)
            _core.set_num_threads(1)
            tile = _core.ops.attention(*args)
            _core.ops._force_scalar(True)
            scalar = _core.ops.attention(*args)
            _core.ops._force_scalar(False)
            assert np.array_equal(split, tile), f"prefix {prefix_len}, {n} nodes: 2 vs 1 thread"
            assert np.array_equal(split, scalar), f"prefix {prefix_len}, {n} nodes: SIMD vs scalar"
            k32, v32 = k.astype(np.float32), v.astype(np.float32)
            for i in range(n):
                slots = list(range(prefix_len)) + [prefix_len + j for j in np.nonzero(a["mask"][i])[0]]
                want = decode_over(a["q"][i], k32, v32, slots, heads)
                assert np.array_equal(split[i], want), f"prefix {prefix_len}: node {i} differs from its decode"
    finally:
        _core.ops._force_scalar(False)
        _core.set_num_threads(threads)


@pytest.mark.parametrize("heads", [(9, 3), (8, 2), (16, 2)], ids=lambda h: f"{h[0]}/{h[1]}")
@pytest.mark.parametrize("d", [64, 80])
@pytest.mark.parametrize("half", [False, True], ids=["f32", "f16"])
def test_avx2_tile_shared_prefix_equals_scalar(heads, d, half):
    # The AVX2 tile path reads the committed prefix's K/V rows once for groups of 1..4 items (one or
    # two threads, decodes and trees of 2..15 nodes split the heads differently); every row must
    # still have the scalar path's bits.
    if "avx2" not in _core.ops._simd_levels():
        pytest.skip("no AVX2 on this CPU")
    rng = np.random.default_rng(d * 3 + heads[0] + half)
    threads = _core.get_num_threads()
    try:
        for prefix_len in (37, 130, 700):
            for n in (1, 2, 5, 9, 15):
                a = make_inputs(rng, n, heads[0], heads[1], d, prefix_len, "tree" if n > 1 else "causal")
                k, v = (a["k"].astype(np.float16), a["v"].astype(np.float16)) if half else (a["k"], a["v"])
                args = (a["q"], k, v, prefix_len, a["mask"])
                _core.ops._force_scalar(True)
                want = _core.ops.attention(*args)
                _core.ops._cap_simd("avx2")
                for nth in (1, 2):
                    _core.set_num_threads(nth)
                    got = _core.ops.attention(*args)
                    assert np.array_equal(got, want), f"prefix {prefix_len}, {n} nodes, {nth} threads: AVX2 vs scalar"
                _core.set_num_threads(threads)
    finally:
        _core.ops._force_scalar(False)
        _core.set_num_threads(threads)


@pytest.mark.parametrize("half", [False, True], ids=["f32", "f16"])
def test_causal_prefill_same_bits_at_any_thread_count(half):
    # Threads take shares of equal keys read, not of equal tile counts (a causal chunk's late tiles read
    # more): 16 threads over few tiles leave some shares empty. No share may change a row's bits.
    rng = np.random.default_rng(5)
    threads = _core.get_num_threads()
    try:
        for prefix_len, n in [(0, 64), (100, 37), (0, 3)]:
            a = make_inputs(rng, n, 9, 3, 64, prefix_len, "causal")
            k, v = (a["k"].astype(np.float16), a["v"].astype(np.float16)) if half else (a["k"], a["v"])
            _core.set_num_threads(1)
            want = _core.ops.attention(a["q"], k, v, prefix_len)
            for nth in (2, 3, 16):
                _core.set_num_threads(nth)
                got = _core.ops.attention(a["q"], k, v, prefix_len)
                assert np.array_equal(got, want), f"prefix {prefix_len}, {n} rows: {nth} threads vs 1"
    finally:
        _core.set_num_threads(threads)


@pytest.mark.parametrize("heads", [(9, 3), (8, 2), (4, 4)], ids=lambda h: f"{h[0]}/{h[1]}")
@pytest.mark.parametrize("d", [64, 80, 128])
def test_f16_prefill_keys_in_lanes_equals_decode_and_scalar(heads, d):
    # A prefill chunk (>= 16 queries) over an F16 cache converts it once and scores the tiles' shared
    # prefix from transposed 16-key blocks (keys in lanes, attention_blocks.h scores_kt16), partial
    # blocks included; every row must equal a T=1 decode at its position and the scalar reference.
    rng = np.random.default_rng(d * 7 + heads[0])
    threads = _core.get_num_threads()
    try:
        for prefix_len, n in [(0, 40), (37, 24), (300, 17)]:
            a = make_inputs(rng, n, heads[0], heads[1], d, prefix_len, "causal")
            k, v = a["k"].astype(np.float16), a["v"].astype(np.float16)
            _core.set_num_threads(2)
            pre = _core.ops.attention(a["q"], k, v, prefix_len)
            _core.ops._force_scalar(True)
            scalar = _core.ops.attention(a["q"], k, v, prefix_len)
            _core.ops._force_scalar(False)
            assert np.array_equal(pre, scalar), f"prefix {prefix_len}: SIMD vs scalar"
            for i in range(n):
                dec = _core.ops.attention(a["q"][i:i + 1], k, v, prefix_len + i)
                assert np.array_equal(pre[i], dec[0]), f"prefix {prefix_len}, row {i}"
    finally:
        _core.ops._force_scalar(False)
        _core.set_num_threads(threads)
