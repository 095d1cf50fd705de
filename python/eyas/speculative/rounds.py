"""One speculative round as four small steps: propose -> verify -> accept -> commit (DESIGN §4).

Propose is the `Proposer`'s (eyas.speculative.proposer); the other three are thin calls into C++
here. The data handed between them is a `DraftTree` and an `Accepted`.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class DraftTree:
    tokens: np.ndarray  # int32[N] root first
    parents: np.ndarray  # int32[N] root -1
    depths: np.ndarray  # int32[N] root 0
    mask: np.ndarray  # uint8[N, N] ancestor closure incl. self and root
    # float32[N] the drafter's cumulative draft log-prob of each node (root 0), or None when the
    # drafter gives none; merging trees of several drafters (tree_merge) ranks nodes by it.
    scores: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.tokens.shape[0])


def drop_unlikely(tree: DraftTree, min_log_prob: float) -> DraftTree:
    """The tree without the nodes whose score is under min_log_prob, except its most likely first token
    (as the C++ drafters build it: a proposer that ignores the floor gets the same tree). A node scores at
    most its parent's (scores are cumulative log-probs), so the kept nodes stay closed under ancestors."""
    if tree.scores is None or min_log_prob == -np.inf or tree.size == 1:
        return tree
    first = np.flatnonzero(tree.depths == 1)
    likely = tree.scores >= min_log_prob
    likely[0] = likely[first[np.argmax(tree.scores[first])]] = True  # the root; the likeliest first token (lowest index on ties)
    keep = np.flatnonzero(likely)
    if len(keep) == tree.size:
        return tree
    index = np.full(tree.size, -1, np.int32)
    index[keep] = np.arange(len(keep), dtype=np.int32)
    parents = np.where(keep == 0, -1, index[tree.parents[keep]]).astype(np.int32)
    if (parents[1:] < 0).any():
        raise ValueError("[speculative] a draft tree's node scores rise along a path; cannot drop by score")
    return DraftTree(tree.tokens[keep], parents, tree.depths[keep], np.ascontiguousarray(tree.mask[np.ix_(keep, keep)]),
                     tree.scores[keep])


@dataclasses.dataclass
class Verified:
    features: np.ndarray  # float32[N, F*H] the drafter's aux features of every node
    logits: np.ndarray | None = None  # float32[N, V] (eager mode, sampled)
    hidden: np.ndarray | None = None  # float32[N, H] final pre-norm states (lazy-logits mode)
    argmaxes: np.ndarray | None = None  # int32[N] every node's greedy token (eager mode, greedy)


@dataclasses.dataclass
class Accepted:
    path: np.ndarray  # int32[m] accepted nodes from the root
    tokens: np.ndarray  # int32[m] accepted drafted tokens, then the bonus token


def split_aux(aux: np.ndarray, n_features: int, lazy: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Captured aux F32[N, A*H] -> (drafter features F32[N, n_features*H], final hidden F32[N, H] or None)."""
    if not lazy:
        return aux, None
    H = aux.shape[1] // (n_features + 1)
    return np.ascontiguousarray(aux[:, : n_features * H]), np.ascontiguousarray(aux[:, n_features * H :])


def verify(target, tree: DraftTree, n_features: int, lazy: bool, greedy: bool = False) -> Verified:
    """Target runs the whole tree after its committed prefix (positions length + depth). Lazy mode
    skips the lm_head here; accept computes logits for the nodes it visits. Otherwise a greedy verify
    takes every node's argmax alone (the logits of N rows of a 248K-token vocabulary stay in the engine)."""
    mode = "none" if lazy else "argmax_all" if greedy else "all"
    out = target.forward(tree.tokens, mask=tree.mask, depths=tree.depths, logits=mode, capture_aux=True)
    features, hidden = split_aux(out["aux"], n_features, lazy)
    return Verified(features, out.get("logits"), hidden, out.get("argmaxes"))


def accept(verified: Verified, tree: DraftTree, sampling, rng, head=None) -> Accepted:
    """Greedy longest-path walk, or lossless tree sampling with the target's `SamplingParams`.
    head: the proposer's target_head (output norm, output weight, eps) in lazy mode."""
    from eyas import _core

    if verified.argmaxes is not None:  # greedy, from verify's argmaxes
        r = _core.speculative.accept_argmax(verified.argmaxes, tree.tokens, tree.parents)
        return Accepted(r["path"], r["tokens"])
    kw = dict(sampling.filters(), rng=rng)
    if verified.hidden is not None:
        norm, out_w, eps = head
        r = _core.speculative.accept_hidden(verified.hidden, norm, out_w, eps, tree.tokens, tree.parents, **kw)
    else:
        r = _core.speculative.accept(verified.logits, tree.tokens, tree.parents, **kw)
    return Accepted(r["path"], r["tokens"])


ROOT_PARENTS = np.array([-1], np.int32)  # a one-node tree's parents: a plain step through Transformer.advance


def advances_in_one_call(target) -> bool:
    """Whether `target` is a `_core.Transformer`, whose `advance` verifies, accepts and commits in one call
    (after a target forward the interpreter runs cache-cold, and each Python step between them cost tens of
    us); other targets (the server's batched ones, test models) take the steps one by one."""
    from eyas import _core

    return type(target) is _core.Transformer


def advance(target, tree: DraftTree, n_features: int, lazy: bool, sampling, rng, head=None, *,
            one_call: bool) -> tuple[Accepted, np.ndarray]:
    """verify, accept and commit: (the accepted path and tokens, their nodes' drafter features F32[m, F*H]).
    one_call: `advances_in_one_call(target)`, decided once per generation; lazy logits take the three steps."""
    if one_call and not lazy:
        r = target.advance(tree.tokens, tree.parents, rng=rng, capture_aux=True, **sampling.filters())
        return Accepted(r["path"], r["tokens"]), r["aux"]
    verified = verify(target, tree, n_features, lazy, sampling.greedy)
    acc = accept(verified, tree, sampling, rng, head)
    commit(target, acc)
    return acc, accepted_rows(verified.features, acc.path)


def tree_depth(tree: DraftTree) -> int:
    """The deepest drafted level. A chain's last node is its deepest (depth size - 1), read without a numpy
    reduction (~25 us cache-cold after a target forward); any other tree (several branches, as merged
    drafts) takes the maximum."""
    last = int(tree.depths[-1])
    return last if last == tree.size - 1 else int(tree.depths.max())


def accepted_rows(rows: np.ndarray, path: np.ndarray) -> np.ndarray:
    """rows[path]: the accepted nodes' rows (F32[m, ...]). A chain's path is its first m nodes, so those rows
    are a view: after a target forward the interpreter runs cache-cold, and a 2-row fancy index took ~45 us
    there (docs/speculative.md §7)."""
    m = len(path)
    # accept checks that every parent precedes its node, so ids rise along a path: only 0..m-1 ends at m - 1
    return rows[:m] if int(path[-1]) == m - 1 else rows[path]


def commit(target, accepted: Accepted) -> None:
    """Keep the accepted rows of the target's KV (the root included); the drafter's tree slots are
    scratch and need no commit: its next ingest rewrites them from target features."""
    target.commit(accepted.path)
