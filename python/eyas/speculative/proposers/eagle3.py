"""The EAGLE-3 family: the C++ Eagle3Drafter (one layer over three target layers' features,
EAGLE-2 dynamic tree expansion) behind the `Proposer` protocol."""

from __future__ import annotations

import dataclasses

import numpy as np

from eyas.drafters.eagle3 import Drafter
from eyas.speculative.loading import load_drafter
from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import Proposer, register_proposer
from eyas.speculative.rounds import DraftTree


class Eagle3Proposer(Proposer):
    family = "eagle3"

    def __init__(self, drafter: Drafter):
        self.drafter = drafter
        self.policy = TreePolicy(*drafter.tree_policy) if drafter.tree_policy is not None else None
        self.target_head = drafter.target_head
        self._runtime = None

    @property
    def aux_layers(self) -> list[int]:
        return self.drafter.aux_layers

    @property
    def feature_layers(self) -> list[int]:
        return self.drafter.feature_layers

    def reset(self, capacity: int) -> None:
        self._runtime = self.drafter.runtime(capacity)
        self._runtime.reset()

    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        self._runtime.ingest(features, tokens)

    @property
    def length(self) -> int:
        return self._runtime.length if self._runtime is not None else 0

    def truncate(self, n: int) -> None:
        self._runtime.truncate(n)

    def fork(self) -> "Eagle3Proposer":
        # Drafter caches its C++ runtime (the drafter's KV) per capacity: the fork gets its own cache
        # over the same weight arrays.
        return Eagle3Proposer(dataclasses.replace(self.drafter, _runtimes={}))

    def propose(self, policy: TreePolicy) -> DraftTree:
        t = self._runtime.expand(policy.top_k, policy.depth, policy.total_tokens)
        return DraftTree(t["tokens"], t["parents"], t["depths"], t["mask"])


def load(drafter, target, *, weight_type: str = "q8_0") -> Eagle3Proposer | None:
    """drafter: a checkpoint folder, "default" (the bundled drafter that fits; None if none does)
    or a loaded `Drafter`; target: an `eyas.loaders.LoadedModel`."""
    d = load_drafter(drafter, target, weight_type=weight_type)
    return None if d is None else Eagle3Proposer(d)


register_proposer(Eagle3Proposer.family, load)
