"""The Gated DeltaNet conv's SIMD copies (csrc/cpu/gdn.cpp: 16 / 8 channels at once, the [C, K]
weights transposed in registers) against a float32 numpy replay of the scalar kernel's operations
(from 0.0f, per tap in order one multiply and one add, then silu), and the conv window update split
across threads (streaming stores for one row) against its definition."""

import numpy as np
import pytest

from eyas import _core
from tests.test_qwen35_ops import _path

ops = _core.ops
f32, i32 = np.float32, np.int32


@pytest.fixture
def threads_and_simd():
    saved, levels = _core.get_num_threads(), ops._simd_levels()
    yield levels
    ops._cap_simd(levels[-1])
    _core.set_num_threads(saved)


def conv_products(u, parents, conv, w):
    """Pre-silu sums in float32, in the kernel's order: acc = 0; acc += w[:, j] * x_j for j = 0..K-1."""
    K = w.shape[1]
    out = np.empty(u.shape, f32)
    for i in range(len(u)):
        seq = list(conv) + [u[j] for j in _path(parents, i)]
        win = seq[-K:]
        acc = np.zeros(u.shape[1], f32)
        for j in range(K):
            acc = acc + w[:, j] * win[j]  # float32 multiply, then float32 add: no fused multiply-add
        out[i] = acc
    return out


@pytest.mark.parametrize("K", [4, 3])
def test_conv_every_level_and_thread_count_matches_the_scalar_operations(threads_and_simd, K):
    """C = 6,147: whole 512-channel chunks, whole vectors and a scalar tail; a tree and one decode row.
    The silu is the elementwise one (the same bits at every level), so it is applied by the scalar-capped
    op to the replayed sums: every level and thread count must give those bits."""
    rng = np.random.default_rng(21)
    c = 6147
    tree = np.array([-1, 0, 0, 1, 3], i32)
    u = (rng.standard_normal((len(tree), c)) * rng.choice([1e-3, 1.0, 30.0], size=(len(tree), c))).astype(f32)
    w, conv = rng.standard_normal((c, K)).astype(f32), rng.standard_normal((K - 1, c)).astype(f32)
    want_sum = conv_products(u, tree, conv, w)
    # silu(x) through the op itself: a one-tap-at-the-end conv (w = [0, .., 0, 1], zero window) gives
    # silu(0 + 0*0 + .. + 1*x) = silu(x) exactly.
    unit = np.zeros((c, K), f32)
    unit[:, -1] = 1
    levels = threads_and_simd
    ops._cap_simd(levels[0])
    _core.set_num_threads(1)
    want = ops.gdn_conv(want_sum, np.full(len(tree), -1, i32), np.zeros((K - 1, c), f32), unit)
    for level in levels:
        ops._cap_simd(level)
        for nt in (1, 2, 3):
            _core.set_num_threads(nt)
            got = ops.gdn_conv(u, tree, conv, w)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (level, nt)
            one = ops.gdn_conv(u[:1], tree[:1], conv, w)
            assert np.array_equal(one.view(np.uint32), want[:1].view(np.uint32)), (level, nt)


@pytest.mark.parametrize("c", [8, 1200, 6144])
def test_conv_state_split_across_threads(threads_and_simd, c):
    """The window update of one row (a decode step: streaming stores on AVX-512), of several rows and of
    chosen nodes, at every thread count and level: the last K-1 rows of conv_in ++ u[nodes]."""
    K, n = 4, 5
    rng = np.random.default_rng(c)
    u = rng.standard_normal((n, c)).astype(f32)
    conv = rng.standard_normal((K - 1, c)).astype(f32)
    cases = [(u[:1], None), (u, None), (u[:2], None), (u, np.array([4], i32)), (u, np.array([3, 0], i32)),
             (u, np.array([1, 2, 4, 0], i32))]
    for level in threads_and_simd:
        ops._cap_simd(level)
        for nt in (1, 2, 3):
            _core.set_num_threads(nt)
            for rows, nodes in cases:
                picked = rows if nodes is None else rows[nodes]
                want = np.concatenate([conv, picked])[-(K - 1):]
                got = ops.gdn_conv_state(conv, rows, nodes)
                assert np.array_equal(got, want), (level, nt, len(picked))
