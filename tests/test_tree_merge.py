"""`merge_trees` on hand-made trees: shared paths merge into one node with the best score, the best
`total_tokens` nodes are kept closed under ancestors, ordered root first by depth, mask rebuilt."""

import numpy as np
import pytest

from eyas.speculative.rounds import DraftTree
from eyas.speculative.tree_merge import merge_trees

ROOT = 100


def tree(nodes) -> DraftTree:
    """nodes: [(token, parent index, score)] after the root (node 0, score 0); parents before children."""
    tokens, parents, scores = [ROOT], [-1], [0.0]
    for token, parent, score in nodes:
        tokens.append(token)
        parents.append(parent)
        scores.append(score)
    n = len(tokens)
    depths, mask = np.zeros(n, np.int32), np.zeros((n, n), np.uint8)
    for i in range(1, n):
        depths[i] = depths[parents[i]] + 1
        mask[i] = mask[parents[i]]
    mask[np.arange(n), np.arange(n)] = 1
    return DraftTree(np.array(tokens, np.int32), np.array(parents, np.int32), depths, mask,
                     np.array(scores, np.float32))


def paths(t: DraftTree) -> dict[tuple, float]:
    """{token path after the root: score} of every node."""
    out, by_node = {}, {0: ()}
    for i in range(1, t.size):
        by_node[i] = by_node[int(t.parents[i])] + (int(t.tokens[i]),)
        out[by_node[i]] = float(t.scores[i])
    return out


def check_well_formed(t: DraftTree) -> None:
    n = t.size
    assert t.tokens[0] == ROOT and t.parents[0] == -1 and t.depths[0] == 0 and t.scores[0] == 0
    assert all(0 <= t.parents[i] < i for i in range(1, n))  # parents before children
    assert all(t.depths[i] == t.depths[t.parents[i]] + 1 for i in range(1, n))
    assert np.all(np.diff(t.depths) >= 0)  # depth non-decreasing
    for i in range(n):  # the mask row: exactly the node, its ancestors and the root
        want, j = set(), i
        while j != -1:
            want.add(j)
            j = int(t.parents[j])
        assert set(np.flatnonzero(t.mask[i]).tolist()) == want, i
    assert t.mask.dtype == np.uint8 and t.tokens.dtype == t.parents.dtype == t.depths.dtype == np.int32
    assert len(set(paths(t))) == n - 1  # no path twice


A = tree([(5, 0, -0.1), (6, 0, -0.5), (7, 1, -0.3)])
B = tree([(5, 0, -0.2), (8, 0, -0.4), (9, 1, -0.6), (7, 1, -0.25)])


def test_shared_paths_are_one_node_with_the_best_score():
    m = merge_trees([A, B], 100)
    check_well_formed(m)
    assert paths(m) == pytest.approx({(5,): -0.1, (6,): -0.5, (8,): -0.4, (5, 7): -0.25, (5, 9): -0.6})
    assert merge_trees([B, A], 100).size == m.size == 6


def test_the_best_nodes_are_kept_in_rank_order():
    m = merge_trees([A, B], 4)
    check_well_formed(m)
    assert paths(m) == pytest.approx({(5,): -0.1, (5, 7): -0.25, (8,): -0.4})
    # Root, then depth 1 by score, then depth 2.
    assert m.tokens.tolist() == [ROOT, 5, 8, 7] and m.parents.tolist() == [-1, 0, 0, 1]


@pytest.mark.parametrize("total", [1, 2, 3, 5, 6, 50])
def test_size_cap(total):
    m = merge_trees([A, B], total)
    check_well_formed(m)
    assert m.size == min(total, 6)


def test_closed_under_ancestors_even_when_a_child_outscores_its_parent():
    # Hand-made scores that grow along a path (a drafter's never do): the child cannot come without its parent.
    t = tree([(5, 0, -2.0), (7, 1, -0.1)])
    u = tree([(6, 0, -1.0)])
    assert paths(merge_trees([t, u], 2)) == pytest.approx({(6,): -1.0})
    m = merge_trees([t, u], 3)
    check_well_formed(m)
    assert set(paths(m)) == {(6,), (5,)}
    assert set(paths(merge_trees([t, u], 4))) == {(6,), (5,), (5, 7)}


def test_ties_go_to_the_shallower_node_then_the_first_seen():
    t = tree([(5, 0, -0.5), (7, 1, -0.5)])
    u = tree([(6, 0, -0.5)])
    assert merge_trees([t, u], 2).tokens.tolist() == [ROOT, 5]
    assert merge_trees([u, t], 2).tokens.tolist() == [ROOT, 6]
    assert merge_trees([t, u], 3).tokens.tolist() == [ROOT, 5, 6]  # both depth 1 before the depth-2 tie


def test_equals_the_global_top_k_on_random_drafter_like_trees():
    """Scores that never grow along a path (cumulative log-probs): the merge keeps exactly the
    total - 1 best distinct paths, the best score of each."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        trees = []
        for _ in range(int(rng.integers(1, 4))):
            nodes, scores = [], [0.0]
            for i in range(1, int(rng.integers(2, 12))):
                parent = int(rng.integers(0, i))
                s = scores[parent] - float(rng.uniform(0.01, 2.0))
                nodes.append((int(rng.integers(0, 4)), parent, s))
                scores.append(s)
            t = tree(nodes)
            if len(paths(t)) == t.size - 1:  # the merge assumes each tree has no duplicate sibling token
                trees.append(t)
        if not trees:
            continue
        best: dict[tuple, float] = {}
        for t in trees:
            for p, s in paths(t).items():
                best[p] = max(best.get(p, -np.inf), s)
        total = int(rng.integers(1, len(best) + 3))
        m = merge_trees(trees, total)
        check_well_formed(m)
        want = sorted(best.values(), reverse=True)[: total - 1]
        assert sorted(paths(m).values(), reverse=True) == pytest.approx(want)
        assert all(best[p] == pytest.approx(s) for p, s in paths(m).items())


def test_errors():
    other_root = tree([(5, 0, -0.1)])
    other_root.tokens[0] = 3
    with pytest.raises(ValueError, match=r"\[speculative\] merge_trees: tree 1 is rooted at token 3"):
        merge_trees([A, other_root], 4)
    no_scores = tree([(5, 0, -0.1)])
    no_scores.scores = None
    with pytest.raises(ValueError, match=r"\[speculative\] merge_trees: tree 0 carries no node scores"):
        merge_trees([no_scores], 4)
    with pytest.raises(ValueError, match=r"\[speculative\] merge_trees needs at least one tree"):
        merge_trees([], 4)
    with pytest.raises(ValueError, match=r"total_tokens must be an integer >= 1"):
        merge_trees([A], 0)
