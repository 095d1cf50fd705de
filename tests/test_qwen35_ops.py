"""Gated DeltaNet ops (csrc/ops/gdn.h) against a float64 numpy reference of
reference/qwen35_hybrid.md §3b, and the tree seam: a node evaluated from its parent's state gives the
bits of a chain rerun of its root-to-node path, at any T and thread count."""

import numpy as np
import pytest

from eyas import _core

ops = _core.ops
f32, i32 = np.float32, np.int32
HK, DK, HV, DV, K = 2, 16, 4, 8, 4
C = 2 * HK * DK + HV * DV


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return dict(
        u=rng.standard_normal((n, C)).astype(f32),
        qkv=rng.standard_normal((n, C)).astype(f32),
        a=rng.standard_normal((n, HV)).astype(f32),
        b=rng.standard_normal((n, HV)).astype(f32),
        A=(-rng.uniform(0.05, 1.0, HV)).astype(f32),
        dt=(0.5 * rng.standard_normal(HV)).astype(f32),
        w=(0.5 * rng.standard_normal((C, K))).astype(f32),
        conv=rng.standard_normal((K - 1, C)).astype(f32),
        state=(0.3 * rng.standard_normal((HV, DK, DV))).astype(f32),
    )


def _path(parents, i):
    out = []
    while i >= 0:
        out.append(i)
        i = parents[i]
    return out[::-1]


def ref_conv(u, parents, conv, w):
    """float64 causal depthwise conv + SiLU along each row's parent chain."""
    out = np.zeros(u.shape)
    for i in range(len(u)):
        rows = [u[j].astype(np.float64) for j in _path(parents, i)]
        seq = [r.astype(np.float64) for r in conv] + rows
        win = np.stack(seq[-K:])  # [K, C], newest last
        acc = (w.astype(np.float64) * win.T).sum(1)
        out[i] = acc / (1 + np.exp(-acc))
    return out


def ref_step(S, qkv, a, b, A, dt):
    """One float64 delta-rule step of every head; returns (new S [Hv, Dk, Dv], o [Hv*Dv])."""
    x = qkv.astype(np.float64)
    q = x[: HK * DK].reshape(HK, DK)
    k = x[HK * DK : 2 * HK * DK].reshape(HK, DK)
    v = x[2 * HK * DK :].reshape(HV, DV)
    q = q / np.sqrt((q * q).sum(1, keepdims=True) + 1e-6) / np.sqrt(DK)
    k = k / np.sqrt((k * k).sum(1, keepdims=True) + 1e-6)
    beta = 1 / (1 + np.exp(-b.astype(np.float64)))
    sp = np.log1p(np.exp(a.astype(np.float64) + dt))
    alpha = np.exp(A.astype(np.float64) * sp)
    S = S.copy()
    o = np.zeros((HV, DV))
    r = HV // HK
    for h in range(HV):
        kh, qh = k[h // r], q[h // r]
        Sp = alpha[h] * S[h]
        delta = beta[h] * (v[h] - Sp.T @ kh)
        S[h] = Sp + np.outer(kh, delta)
        o[h] = S[h].T @ qh
    return S, o.reshape(-1)


def ref_core(p, parents):
    states, outs = [], []
    for i in range(len(parents)):
        S0 = p["state"].astype(np.float64) if parents[i] < 0 else states[parents[i]]
        S, o = ref_step(S0, p["qkv"][i], p["a"][i], p["b"][i], p["A"], p["dt"])
        states.append(S)
        outs.append(o)
    return np.stack(outs), states


def _core_op(p, parents, **kw):
    return ops.gdn_core(p["qkv"], p["a"], p["b"], p["A"], p["dt"], np.asarray(parents, i32), p["state"],
                        hk=HK, dk=DK, **kw)


TREE = [-1, 0, 0, 1, 1, 2, 3, -1, 7, 5, 9]  # siblings, 4 levels, a second root


def test_conv_matches_reference_on_a_tree():
    p = _inputs(len(TREE))
    y = ops.gdn_conv(p["u"], np.array(TREE, i32), p["conv"], p["w"])
    np.testing.assert_allclose(y, ref_conv(p["u"], TREE, p["conv"], p["w"]), rtol=1e-5, atol=1e-5)


def test_core_matches_reference_on_a_tree_and_a_chain():
    p = _inputs(len(TREE), seed=1)
    np.testing.assert_allclose(_core_op(p, TREE), ref_core(p, TREE)[0], rtol=1e-4, atol=1e-5)
    chain = list(range(-1, len(TREE) - 1))
    o, S = _core_op(p, chain, final_state=True)
    ro, rs = ref_core(p, chain)
    np.testing.assert_allclose(o, ro, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(S, rs[-1], rtol=1e-4, atol=1e-5)


def test_tree_rows_equal_path_reruns_bit_for_bit():
    p = _inputs(len(TREE), seed=2)
    tree_o = _core_op(p, TREE)
    tree_y = ops.gdn_conv(p["u"], np.array(TREE, i32), p["conv"], p["w"])
    for i in range(len(TREE)):
        path = np.array(_path(TREE, i), i32)
        chain = np.arange(-1, len(path) - 1, dtype=i32)
        o = _core_op(p, chain, nodes=path)
        assert np.array_equal(o[-1], tree_o[i]), i
        y = ops.gdn_conv(np.ascontiguousarray(p["u"][path]), chain, p["conv"], p["w"])
        assert np.array_equal(y[-1], tree_y[i]), i


def _core_case(rng, hk, dk, hv, dv, n):
    """Random gdn_core inputs of n rows: qkv, a, b, A (a decay), dt, state, a random tree and a chain."""
    c = 2 * hk * dk + hv * dv
    qkv = rng.standard_normal((n, c)).astype(f32)
    a, b = rng.standard_normal((n, hv)).astype(f32), rng.standard_normal((n, hv)).astype(f32)
    A, dt = (-rng.uniform(0.05, 1.0, hv)).astype(f32), (0.5 * rng.standard_normal(hv)).astype(f32)
    state = rng.standard_normal((hv, dk, dv)).astype(f32)
    tree = np.array([-1] + [int(rng.integers(-1, i)) for i in range(1, n)], i32)
    chain = np.arange(-1, n - 1, dtype=i32)
    return qkv, a, b, A, dt, state, tree, chain


@pytest.fixture
def threads():
    saved = _core.get_num_threads()
    yield
    _core.set_num_threads(saved)


def test_chain_bits_do_not_depend_on_T_or_threads(threads):
    n = 9
    p = _inputs(n, seed=3)
    chain = np.arange(-1, n - 1, dtype=i32)
    _core.set_num_threads(1)
    o_all, S_all = _core_op(p, chain, final_state=True)
    for nt in (1, 2, 3):
        _core.set_num_threads(nt)
        # One row at a time, carrying the state: plain decoding.
        state = p["state"]
        for t in range(n):
            q = dict(p, state=state, qkv=p["qkv"][t : t + 1], a=p["a"][t : t + 1], b=p["b"][t : t + 1])
            o, state = _core_op(q, [-1], final_state=True)
            assert np.array_equal(o[0], o_all[t]), (nt, t)
        assert np.array_equal(state, S_all)
        assert np.array_equal(_core_op(p, chain, final_state=True)[1], S_all)


@pytest.mark.parametrize("dv", [64, 128])  # the AVX-512 chain kernel's blocks of 64 value columns
def test_wide_chain_equals_one_row_at_a_time(threads, dv):
    """A chain of rows (prefill, or a verified chain of drafts) and the same rows one at a time (decode)
    give the same outputs and state, bit for bit, at 1-3 threads; on AVX-512 the chain runs in L1-sized
    column blocks."""
    hk, dk, n = 2, 128, 7
    qkv, a, b, A, dt, state, _, chain = _core_case(np.random.default_rng(12), hk, dk, hv=4, dv=dv, n=n)
    for nt in (1, 2, 3):
        _core.set_num_threads(nt)
        o_all, S_all = ops.gdn_core(qkv, a, b, A, dt, chain, state, hk=hk, dk=dk, final_state=True)
        # the same chain without its final state: a tree forward of a chain of drafts
        o_tree = ops.gdn_core(qkv, a, b, A, dt, chain, state, hk=hk, dk=dk)
        assert np.array_equal(o_tree.view(np.uint32), o_all.view(np.uint32)), nt
        s = state
        for t in range(n):
            o, s = ops.gdn_core(qkv[t : t + 1], a[t : t + 1], b[t : t + 1], A, dt, chain[:1], s, hk=hk, dk=dk,
                                final_state=True)
            assert np.array_equal(o[0].view(np.uint32), o_all[t].view(np.uint32)), (nt, t)
        assert np.array_equal(s.view(np.uint32), S_all.view(np.uint32)), nt


def test_conv_state_keeps_the_last_rows_of_the_path():
    p = _inputs(5, seed=4)
    for nodes in ([], [3], [0, 2], [0, 1, 2, 4]):
        seq = np.concatenate([p["conv"], p["u"][nodes]]) if nodes else p["conv"]
        out = ops.gdn_conv_state(p["conv"], p["u"], np.array(nodes, i32))
        assert np.array_equal(out, seq[-(K - 1):]), nodes
    assert np.array_equal(ops.gdn_conv_state(p["conv"], p["u"]), p["u"][-(K - 1):])


def test_tiled_head_order_is_a_permutation_of_grouped():
    """llama.cpp's GGUF moves HF value head g*r + j to j*Hk + g; with tiled=True the op reads key head
    h % Hk, so permuting v, a, b and the state gives the grouped result permuted, bit for bit."""
    p = _inputs(len(TREE), seed=5)
    r = HV // HK
    tiled_of = np.array([(h % r) * HK + h // r for h in range(HV)])  # grouped head -> tiled position
    perm = np.argsort(tiled_of)  # tiled position -> grouped head
    v0 = 2 * HK * DK
    q = dict(p, a=np.ascontiguousarray(p["a"][:, perm]), b=np.ascontiguousarray(p["b"][:, perm]),
             A=np.ascontiguousarray(p["A"][perm]), dt=np.ascontiguousarray(p["dt"][perm]),
             state=np.ascontiguousarray(p["state"][perm]))
    q["qkv"] = np.concatenate([p["qkv"][:, :v0], p["qkv"][:, v0:].reshape(-1, HV, DV)[:, perm].reshape(-1, HV * DV)], 1)
    grouped = _core_op(p, TREE).reshape(-1, HV, DV)
    tiled = _core_op(q, TREE, tiled=True).reshape(-1, HV, DV)
    assert np.array_equal(tiled, grouped[:, perm])


def test_bad_arguments_are_clear_errors():
    p = _inputs(3)
    with pytest.raises(ValueError, match=r"^\[gdn_conv\] parents\[1\] = 1 must be in \[-1, 1\)"):
        ops.gdn_conv(p["u"], np.array([-1, 1, 0], i32), p["conv"], p["w"])
    with pytest.raises(ValueError, match=r"^\[gdn_conv\] conv_state dim 0 must be 3"):
        ops.gdn_conv(p["u"], np.array([-1, 0, 1], i32), p["conv"][:2], p["w"])
    with pytest.raises(ValueError, match=r"^\[gdn_core\] state_out needs a chain"):
        _core_op(p, [-1, 0, 0], final_state=True)
    with pytest.raises(ValueError, match=r"^\[gdn_core\] nodes\[0\] = 7 is outside \[0, 3\)"):
        _core_op(p, [-1], nodes=np.array([7], i32))
    with pytest.raises(ValueError, match=r"^\[gdn_conv_state\] nodes\[0\] = 5 is outside"):
        ops.gdn_conv_state(p["conv"], p["u"], np.array([5], i32))


def test_threaded_kernels_give_the_bits_of_one_thread(threads):
    """Sizes past the kernels' serial cut-offs, so the work really splits across threads (by value head
    in the core, by row in the conv); a tree and a chain of 40 nodes."""
    hk, dk, hv, dv, n = 2, 32, 8, 32, 40
    rng = np.random.default_rng(7)
    qkv, a, b, A, dt, state, tree, chain = _core_case(rng, hk, dk, hv, dv, n)
    c = qkv.shape[1]
    u = rng.standard_normal((n, c)).astype(f32)
    w, conv = rng.standard_normal((c, K)).astype(f32), rng.standard_normal((K - 1, c)).astype(f32)

    def run():
        return (ops.gdn_conv(u, tree, conv, w),
                ops.gdn_core(qkv, a, b, A, dt, tree, state, hk=hk, dk=dk),
                *ops.gdn_core(qkv, a, b, A, dt, chain, state, hk=hk, dk=dk, final_state=True))

    _core.set_num_threads(1)
    want = run()
    for nt in (2, 3):
        _core.set_num_threads(nt)
        for got, ref in zip(run(), want):
            assert np.array_equal(got, ref), nt
    # A chain's first rows do not depend on how many rows follow (batch invariance).
    o = ops.gdn_core(qkv[:9], a[:9], b[:9], A, dt, chain[:9], state, hk=hk, dk=dk)
    assert np.array_equal(o, want[2][:9])


def test_conv_splits_one_row_across_threads_with_the_bits_of_one_thread(threads):
    """A decode step's single row is split by chunks of channels (1,200 channels: two whole chunks and
    a partial one); every thread count and every row count gives the same bits."""
    c, n = 1200, 5
    rng = np.random.default_rng(11)
    u = rng.standard_normal((n, c)).astype(f32)
    w, conv = rng.standard_normal((c, K)).astype(f32), rng.standard_normal((K - 1, c)).astype(f32)
    chain = np.arange(-1, n - 1, dtype=i32)
    _core.set_num_threads(1)
    want = ops.gdn_conv(u, chain, conv, w)
    for nt in (1, 2, 3):
        _core.set_num_threads(nt)
        assert np.array_equal(ops.gdn_conv(u, chain, conv, w), want), nt
        assert np.array_equal(ops.gdn_conv(u[:1], chain[:1], conv, w), want[:1]), nt


def test_every_simd_level_gives_the_conv_the_same_bits():
    """The conv's silu runs 16 / 8 / 1 channels at a time with softmax_exp.h's exp, whose copies give the
    same bits: so does the conv at every level, over a tree and for one decode row (1,203 channels: whole
    vectors and a scalar tail), with large and tiny activations."""
    rng = np.random.default_rng(13)
    c, n = 1203, 6
    u = (rng.standard_normal((n, c)) * rng.choice([1e-3, 1.0, 30.0], size=(n, c))).astype(f32)
    w, conv = rng.standard_normal((c, K)).astype(f32), rng.standard_normal((K - 1, c)).astype(f32)
    tree = np.array([-1, 0, 0, 1, 2, 4], i32)
    levels = _core.ops._simd_levels()
    results = {}
    try:
        for level in levels:
            _core.ops._cap_simd(level)
            results[level] = (ops.gdn_conv(u, tree, conv, w), ops.gdn_conv(u[:1], tree[:1], conv, w))
    finally:
        _core.ops._cap_simd(levels[-1])
    assert len(levels) > 1 or levels == ["scalar"]
    for level in levels[1:]:
        for got, want in zip(results[level], results[levels[0]]):
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), level
    # and it is silu: within float rounding of x / (1 + exp(-x)) in float64
    x = (w[None, :, 0] * conv[0] + w[None, :, 1] * conv[1] + w[None, :, 2] * conv[2] + w[None, :, 3] * u[:1]).astype(np.float64)
    np.testing.assert_allclose(results[levels[0]][1], x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)


def test_every_simd_level_gives_the_core_the_same_bits():
    """The delta rule runs vectorized for each instruction set (AVX-512, AVX2, baseline); its loops sum
    nothing across lanes and fuse nothing, so a tree's and a chain's outputs and final state are the
    same bits at every level this CPU runs."""
    hk, dk = 2, 64
    qkv, a, b, A, dt, state, tree, chain = _core_case(np.random.default_rng(11), hk, dk, hv=4, dv=128, n=12)
    levels = _core.ops._simd_levels()
    results = {}
    try:
        for level in levels:
            _core.ops._cap_simd(level)
            results[level] = (ops.gdn_core(qkv, a, b, A, dt, tree, state, hk=hk, dk=dk),
                              *ops.gdn_core(qkv, a, b, A, dt, chain, state, hk=hk, dk=dk, final_state=True))
    finally:
        _core.ops._cap_simd(levels[-1])
    for level in levels[1:]:
        for got, want in zip(results[level], results[levels[0]]):
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), level
