"""One speculative round as four small steps: propose -> verify -> accept -> commit (DESIGN §4).

Each is a thin call into C++; the data handed between them is a `DraftTree` and an `Accepted`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from eyas.spec.policy import TreePolicy


@dataclasses.dataclass
class DraftTree:
    tokens: np.ndarray  # int32[N] root first
    parents: np.ndarray  # int32[N] root -1
    depths: np.ndarray  # int32[N] root 0
    mask: np.ndarray  # uint8[N, N] ancestor closure incl. self and root

    @property
    def size(self) -> int:
        return int(self.tokens.shape[0])


@dataclasses.dataclass
class Verified:
    logits: np.ndarray  # float32[N, V]
    aux: np.ndarray  # float32[N, A*H]


@dataclasses.dataclass
class Accepted:
    path: np.ndarray  # int32[m] accepted nodes from the root
    tokens: np.ndarray  # int32[m] accepted drafted tokens, then the bonus token


def propose(drafter, aux: np.ndarray, next_tokens: np.ndarray, policy: TreePolicy) -> DraftTree:
    """Drafter ingests the newly committed (feature, next token) pairs, then expands a tree rooted
    at the last of those tokens. aux: float32[m, A*H]; next_tokens: int32[m]."""
    t = drafter.propose(aux, next_tokens, policy.top_k, policy.depth, policy.total_tokens)
    return DraftTree(t["tokens"], t["parents"], t["depths"], t["mask"])


def verify(target, tree: DraftTree) -> Verified:
    """Target runs the whole tree after its committed prefix (positions length + depth)."""
    out = target.forward(tree.tokens, mask=tree.mask, depths=tree.depths, logits="all", capture_aux=True)
    return Verified(out["logits"], out["aux"])


def accept(verified: Verified, tree: DraftTree, params, rng) -> Accepted:
    """Greedy longest-path walk, or lossless tree sampling with the target's sampling params."""
    from eyas import _core

    r = _core.spec.accept(verified.logits, tree.tokens, tree.parents, temperature=float(params.temperature),
                          top_k=int(params.top_k), top_p=float(params.top_p), rng=rng)
    return Accepted(r["path"], r["tokens"])


def commit(target, accepted: Accepted) -> None:
    """Keep the accepted rows of the target's KV (the root included); the drafter's tree slots are
    scratch and need no commit: its next ingest rewrites them from target features."""
    target.commit(accepted.path)
