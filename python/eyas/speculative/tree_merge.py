"""`merge_trees`: several drafters' draft trees over the same root as one tree for a single verify.

A node is its token path from the root, so a continuation that two drafters both propose is one
node (verified once). Its score is the best of the drafters' cumulative draft log-probs for that
path: each drafter's score estimates the chance its path is accepted, and the most confident
drafter's estimate is the one that made the path worth drafting. The best `total_tokens` nodes are
kept, as EAGLE-2 keeps its best candidates.
"""

from __future__ import annotations

import heapq

import numpy as np

from eyas.speculative.rounds import DraftTree


def fail(msg: str) -> None:
    raise ValueError(f"[speculative] {msg}")


def merge_trees(trees: list[DraftTree], total_tokens: int) -> DraftTree:
    """One tree holding the best `total_tokens` nodes (root included) of `trees`, which share their
    root token and each carry `scores`. Ranking: score descending, then the shallower node, then the
    node seen first (trees in the given order, nodes in tree order), so the result is a pure function
    of the inputs. Only nodes whose parent is kept compete, so the tree is closed under ancestors even
    where a score grows along a path. Nodes come root first, by depth, then by rank."""
    if not trees:
        fail("merge_trees needs at least one tree")
    if not isinstance(total_tokens, int) or total_tokens < 1:
        fail(f"merge_trees: total_tokens must be an integer >= 1, got {total_tokens!r}")
    root = int(trees[0].tokens[0])
    # path (tuple of tokens after the root) -> [score, depth, first-seen order]
    nodes: dict[tuple, list] = {(): [0.0, 0, 0]}
    children: dict[tuple, list[tuple]] = {(): []}
    for t, tree in enumerate(trees):
        if tree.scores is None:
            fail(f"merge_trees: tree {t} carries no node scores (its drafter's propose must return them)")
        if int(tree.tokens[0]) != root:
            fail(f"merge_trees: tree {t} is rooted at token {int(tree.tokens[0])}, tree 0 at {root}")
        scores = np.asarray(tree.scores, dtype=np.float64)
        if np.isnan(scores).any():
            fail(f"merge_trees: tree {t} has NaN node scores")
        paths: list[tuple] = [()]
        for i in range(1, tree.size):
            parent = int(tree.parents[i])
            if not 0 <= parent < i:
                fail(f"merge_trees: tree {t} node {i} has parent {parent}; parents must come before children")
            path = paths[parent] + (int(tree.tokens[i]),)
            paths.append(path)
            seen = nodes.get(path)
            if seen is None:
                nodes[path] = [float(scores[i]), len(path), len(nodes)]
                children[path] = []
                children[paths[parent]].append(path)
            else:
                seen[0] = max(seen[0], float(scores[i]))

    def rank(path: tuple) -> tuple:
        score, depth, order = nodes[path]
        return (-score, depth, order)

    # Best-first from the root: the frontier holds the children of kept nodes.
    kept = [()]
    frontier = [(rank(c), c) for c in children[()]]
    heapq.heapify(frontier)
    while frontier and len(kept) < total_tokens:
        _, path = heapq.heappop(frontier)
        kept.append(path)
        for c in children[path]:
            heapq.heappush(frontier, (rank(c), c))
    kept.sort(key=lambda p: (len(p), rank(p)))
    return _tree(root, kept, nodes)


def _tree(root: int, paths: list[tuple], nodes: dict) -> DraftTree:
    """DraftTree arrays of `paths` (root first, parents before children), its mask rebuilt."""
    n = len(paths)
    index = {p: i for i, p in enumerate(paths)}
    tokens = np.array([root] + [p[-1] for p in paths[1:]], dtype=np.int32)
    parents = np.array([-1] + [index[p[:-1]] for p in paths[1:]], dtype=np.int32)
    depths = np.array([len(p) for p in paths], dtype=np.int32)
    scores = np.array([nodes[p][0] for p in paths], dtype=np.float32)
    mask = np.zeros((n, n), dtype=np.uint8)
    for i in range(n):
        if i:
            mask[i] = mask[parents[i]]
        mask[i, i] = 1
    return DraftTree(tokens, parents, depths, mask, scores)
