"""EAGLE-2 tree expansion: hand-worked cases with exact arrays, tie-breaks, and a numpy reference."""

import numpy as np
import pytest

from eyas import _core

speculative = _core.speculative


def logp_rows(*probs):
    return np.log(np.array(probs, dtype=np.float64)).astype(np.float32)


def test_hand_worked_tree():
    # Vd = 4, draft index i -> target id 10 + i; top_k 2, depth 3, tree of 6 incl. root.
    b = speculative.TreeBuilder(2, 3, 6, 4, d2t=np.arange(10, 14, dtype=np.int32))
    b.start(99, logp_rows([0.5, 0.3, 0.15, 0.05])[0])
    assert b.level == 1 and b.wants_level
    assert b.frontier_tokens.tolist() == [10, 11]
    assert b.frontier_parent_rows.tolist() == [0, 0]
    assert b.frontier_mask.tolist() == [[1, 0], [0, 1]]
    # c0 -> children idx2 (.31), idx1 (.10); c1 -> idx0 (.27), idx1 (.015). Next frontier: c2, c4.
    b.extend(logp_rows([0.1, 0.2, 0.62, 0.08], [0.9, 0.05, 0.03, 0.02]))
    assert b.level == 2 and b.wants_level
    assert b.frontier_tokens.tolist() == [12, 10]
    assert b.frontier_parent_rows.tolist() == [0, 1]
    assert b.frontier_mask.tolist() == [[1, 0, 1, 0], [0, 1, 0, 1]]
    b.extend(logp_rows([0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]))
    assert not b.wants_level
    t = b.finish()
    # Pool: c0 .5, c1 .3, c2 .31, c3 .10, c4 .27, c5 .015, c6 .075, c7 .075, c8 .189, c9 .027;
    # best 5 = c0 c2 c1 c4 c8, emitted in candidate order.
    assert t["tokens"].tolist() == [99, 10, 11, 12, 10, 10]
    assert t["parents"].tolist() == [-1, 0, 0, 1, 2, 4]
    assert t["depths"].tolist() == [0, 1, 1, 2, 2, 3]
    assert t["mask"].tolist() == [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 0, 1, 0, 0, 0],
        [1, 1, 0, 1, 0, 0],
        [1, 0, 1, 0, 1, 0],
        [1, 0, 1, 0, 1, 1],
    ]
    want = np.log([1.0, 0.5, 0.3, 0.5 * 0.62, 0.3 * 0.9, 0.3 * 0.9 * 0.7])
    np.testing.assert_allclose(t["scores"], want, rtol=0, atol=1e-5)


def test_ties_prefer_lower_index():
    b = speculative.TreeBuilder(2, 2, 4, 5)
    b.start(0, np.zeros(5, np.float32))
    assert b.frontier_tokens.tolist() == [0, 1]
    # Both frontier nodes' best children tie on score: frontier keeps the lower candidate index.
    b.extend(np.array([[0, 0, 0, 0, 9], [0, 0, 0, 9, 0]], np.float32))
    assert b.frontier_tokens.tolist() == [4, 3]
    t = b.finish()
    # Equal level-1 scores and equal level-2 scores: the first two level-1 nodes, then node c2.
    assert t["tokens"].tolist() == [0, 0, 1, 4]
    assert t["parents"].tolist() == [-1, 0, 0, 1]


@pytest.mark.parametrize("seed", range(4))
def test_first_level_over_a_large_vocabulary(seed):
    # A draft vocabulary the size of the bundled one, with repeated values (ties), NaN and -inf among the
    # logits: the first level holds the top_k by value desc then lower index (NaN ranks as -inf), scored by
    # the log-softmax over the non-NaN values, whatever SIMD scan picks them.
    rng = np.random.default_rng(seed)
    vd, top_k = 16384, 8
    logits = np.round(rng.standard_normal(vd) * 3, 1).astype(np.float32)  # many exact ties
    logits[rng.choice(vd, 50, replace=False)] = np.nan
    logits[rng.choice(vd, 50, replace=False)] = -np.inf
    b = speculative.TreeBuilder(top_k, 2, top_k + 1, vd)
    b.start(7, logits)
    key = np.where(np.isnan(logits), -np.inf, logits)
    order = sorted(range(vd), key=lambda i: (-key[i], i))[:top_k]
    assert b.frontier_tokens.tolist() == order
    t = b.finish()
    finite = key[np.isfinite(key)].astype(np.float64)
    lse = finite.max() + np.log(np.exp(finite - finite.max()).sum())
    np.testing.assert_allclose(t["scores"][1:], key[order] - lse, rtol=0, atol=1e-5)


def test_chain_mode():
    b = speculative.TreeBuilder(1, 4, 32, 6)
    b.start(5, np.array([0, 0, 3, 0, 0, 0], np.float32))
    for tok in (4, 1, 0):
        row = np.zeros((1, 6), np.float32)
        row[0, tok] = 2
        b.extend(row)
    t = b.finish()  # total_tokens is capped by the pool (depth nodes)
    assert t["tokens"].tolist() == [5, 2, 4, 1, 0]
    assert t["parents"].tolist() == [-1, 0, 1, 2, 3]
    assert t["depths"].tolist() == [0, 1, 2, 3, 4]
    assert np.array_equal(t["mask"], np.tril(np.ones((5, 5), np.uint8)))


def test_floor_drops_unlikely_nodes():
    # The hand-worked tree above with a floor of 0.28 on the path probability: c3 (.10), c4 (.27) and
    # c5 (.015) fall below it, so level 2's frontier is c2 alone and level 3's children (.0775) too.
    floor = np.log(0.28)
    b = speculative.TreeBuilder(2, 3, 6, 4, d2t=np.arange(10, 14, dtype=np.int32), min_log_prob=floor)
    b.start(99, logp_rows([0.5, 0.3, 0.15, 0.05])[0])
    assert b.frontier_tokens.tolist() == [10, 11]
    b.extend(logp_rows([0.1, 0.2, 0.62, 0.08], [0.9, 0.05, 0.03, 0.02]))
    assert b.frontier_tokens.tolist() == [12] and b.frontier_parent_rows.tolist() == [0]
    assert b.frontier_mask.tolist() == [[1, 0, 1]]
    b.extend(logp_rows([0.25, 0.25, 0.25, 0.25]))
    assert not b.wants_level
    t = b.finish()
    assert t["tokens"].tolist() == [99, 10, 11, 12]
    assert t["parents"].tolist() == [-1, 0, 0, 1]
    np.testing.assert_allclose(t["scores"], np.log([1.0, 0.5, 0.3, 0.31]), rtol=0, atol=1e-5)


def test_floor_above_every_first_token_keeps_the_likeliest_unexpanded():
    b = speculative.TreeBuilder(2, 4, 5, 4, min_log_prob=np.log(0.6))
    b.start(3, logp_rows([0.25, 0.55, 0.1, 0.1])[0])
    assert not b.wants_level and b.frontier_tokens.tolist() == []  # nothing to expand: no drafter row runs
    t = b.finish()
    assert t["tokens"].tolist() == [3, 1] and t["parents"].tolist() == [-1, 0] and t["mask"].tolist() == [[1, 0], [1, 1]]


def tree_ref(top_k, depth, total, root, root_logits, level_logits_fn, d2t=None, floor=-np.inf):
    """numpy reference of reference §4.1 with the documented tie-breaks; nodes scoring under `floor`
    are neither expanded nor kept, but for the likeliest first token, which is kept."""

    def topk_logp(x):
        x = x.astype(np.float64)
        lse = x.max() + np.log(np.exp(x - x.max()).sum())
        order = sorted(range(len(x)), key=lambda i: (-x[i], i))[:top_k]
        return [(i, np.float32(min((x[i] - x.max()) - (lse - x.max()), 0.0))) for i in order]

    tok = (lambda i: i) if d2t is None else (lambda i: int(d2t[i]))
    cands = []  # (score, parent cand, token, depth)
    for i, lp in topk_logp(root_logits):
        cands.append((np.float32(0) + lp, -1, tok(i), 1))
    frontier = [c for c in range(len(cands)) if cands[c][0] >= floor]
    for level in range(1, depth):
        if not frontier:
            break
        rows = level_logits_fn(level, [cands[c][2] for c in frontier])
        base = len(cands)
        for j, c in enumerate(frontier):
            for i, lp in topk_logp(rows[j]):
                cands.append((np.float32(cands[c][0] + lp), c, tok(i), cands[c][3] + 1))
        new = [c for c in range(base, len(cands)) if cands[c][0] >= floor]
        frontier = sorted(new, key=lambda c: (-cands[c][0], c))[:top_k]
    likely = [c for c in range(len(cands)) if cands[c][0] >= floor or c == 0]  # c0: the likeliest first token
    keep = sorted(sorted(likely, key=lambda c: (-cands[c][0], c))[: total - 1])
    node = {c: n + 1 for n, c in enumerate(keep)}
    tokens = [root] + [cands[c][2] for c in keep]
    parents = [-1] + [0 if cands[c][1] < 0 else node[cands[c][1]] for c in keep]
    return tokens, parents


@pytest.mark.parametrize("top_k,depth,total", [(1, 1, 2), (1, 5, 8), (2, 3, 6), (3, 4, 20), (4, 6, 32), (8, 3, 60)])
def test_matches_reference(top_k, depth, total):
    rng = np.random.default_rng(top_k * 100 + depth)
    V = 11
    table = {}

    def level_logits(level, frontier_tokens):
        # Deterministic per (level, token) so the reference and the builder see the same rows.
        return np.stack([table.setdefault((level, t), rng.standard_normal(V).astype(np.float32) * 2)
                         for t in frontier_tokens])

    d2t = np.sort(rng.choice(100, V, replace=False)).astype(np.int32)
    root_logits = rng.standard_normal(V).astype(np.float32)
    b = speculative.TreeBuilder(top_k, depth, total, V, d2t=d2t)
    b.start(7, root_logits)
    while b.wants_level:
        b.extend(level_logits(b.level, b.frontier_tokens.tolist()))
    t = b.finish()
    tokens, parents = tree_ref(top_k, depth, total, 7, root_logits, level_logits, d2t)
    assert t["tokens"].tolist() == tokens
    assert t["parents"].tolist() == parents
    n = len(tokens)
    assert n == min(total, 1 + top_k + (depth - 1) * top_k * top_k)
    # With a floor between the middle node scores (clear of both: the two sides' last bits may differ) the
    # builder still matches the reference, and keeps only the nodes above it.
    s = np.sort(t["scores"][1:])[::-1]
    floor = float(s[0] - 1.0) if n == 2 else float(s[(n - 1) // 2 - 1] + s[(n - 1) // 2]) / 2
    fb = speculative.TreeBuilder(top_k, depth, total, V, d2t=d2t, min_log_prob=floor)
    fb.start(7, root_logits)
    while fb.wants_level:
        fb.extend(level_logits(fb.level, fb.frontier_tokens.tolist()))
    ft = fb.finish()
    tokens, parents = tree_ref(top_k, depth, total, 7, root_logits, level_logits, d2t, floor)
    assert ft["tokens"].tolist() == tokens and ft["parents"].tolist() == parents
    assert (ft["scores"][1:] >= floor).all() and (ft["tokens"].size < n or n == 2)
    # Mask = ancestor closure, depths = row sums - 1.
    assert np.array_equal(t["depths"], t["mask"].sum(1) - 1)
    for i in range(1, n):
        assert t["parents"][i] < i and t["mask"][i, t["parents"][i]] == 1


@pytest.mark.parametrize("kw,msg", [
    (dict(top_k=0, depth=2, total_tokens=4, draft_vocab=5), "top_k"),
    (dict(top_k=6, depth=2, total_tokens=4, draft_vocab=5), "top_k"),
    (dict(top_k=2, depth=0, total_tokens=4, draft_vocab=5), "depth"),
    (dict(top_k=2, depth=2, total_tokens=1, draft_vocab=5), "total_tokens"),
    (dict(top_k=2, depth=2, total_tokens=4, draft_vocab=5, min_log_prob=0.5), "min_log_prob"),
    (dict(top_k=2, depth=2, total_tokens=4, draft_vocab=5, min_log_prob=float("nan")), "min_log_prob"),
])
def test_bad_policy(kw, msg):
    with pytest.raises(ValueError, match=rf"\[expand_tree\].*{msg}"):
        speculative.TreeBuilder(**kw)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"\[expand_tree\].*d2t"):
        speculative.TreeBuilder(2, 2, 4, 5, d2t=np.arange(4, dtype=np.int32))
    b = speculative.TreeBuilder(2, 2, 4, 5)
    with pytest.raises(ValueError, match=r"\[expand_tree\]"):
        b.start(0, np.zeros(4, np.float32))
    b.start(0, np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"\[expand_tree\]"):
        b.extend(np.zeros((3, 5), np.float32))
    b.extend(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"\[expand_tree\].*last level"):
        b.extend(np.zeros((2, 5), np.float32))


def test_scores_have_the_same_bits_at_every_simd_level():
    """A level's log-softmax normaliser sums exp over the draft vocabulary in 16 fixed double lanes with the
    softmax kernels' exp, so the tree's scores are the same bits on every instruction set (NaN logits skipped)."""
    rng = np.random.default_rng(5)
    Vd = 8192 + 7  # a tail past the last full vector
    rows = (rng.standard_normal((3, Vd)) * 4).astype(np.float32)
    rows[1, ::97] = np.nan

    def scores():
        b = speculative.TreeBuilder(2, 3, 7, Vd)
        b.start(1, rows[0])
        b.extend(rows[1:3])
        return b.finish()["scores"]

    levels = _core.ops._simd_levels()
    try:
        got = {}
        for level in levels:
            _core.ops._cap_simd(level)
            got[level] = scores()
    finally:
        _core.ops._cap_simd(levels[-1])
    for level in levels[1:]:
        assert np.array_equal(got[level].view(np.uint32), got[levels[0]].view(np.uint32)), level
    x = rows[0].astype(np.float64)  # and the normaliser is the log-sum-exp within float rounding
    want = x.max() - (np.log(np.exp(x - x.max()).sum()) + x.max())
    np.testing.assert_allclose(got[levels[0]][1], want, rtol=0, atol=1e-5)
