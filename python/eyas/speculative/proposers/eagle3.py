"""The EAGLE-3 family: the C++ Eagle3Drafter (one layer over three target layers' features,
EAGLE-2 dynamic tree expansion) behind the `Proposer` protocol."""

from __future__ import annotations

import dataclasses

from eyas.drafters.eagle3 import Drafter
from eyas.speculative.loading import load_drafter
from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import RuntimeProposer, register_proposer


class Eagle3Proposer(RuntimeProposer):
    family = "eagle3"

    def __init__(self, drafter: Drafter):
        self.drafter = drafter
        self.policy = TreePolicy(*drafter.tree_policy) if drafter.tree_policy is not None else None
        self.target_head = drafter.target_head

    @property
    def aux_layers(self) -> list[int]:
        return self.drafter.aux_layers

    @property
    def feature_layers(self) -> list[int]:
        return self.drafter.feature_layers

    def make_runtime(self, capacity: int):
        return self.drafter.runtime(capacity)

    def fork(self) -> "Eagle3Proposer":
        # Drafter caches its C++ runtime (the drafter's KV) per capacity: the fork gets its own cache
        # over the same weight arrays.
        return Eagle3Proposer(dataclasses.replace(self.drafter, _runtimes={}))


def load(drafter, target, *, weight_type: str = "q8_0") -> Eagle3Proposer | None:
    """drafter: a checkpoint folder, "default" (the bundled drafter that fits; None if none does)
    or a loaded `Drafter`; target: an `eyas.loaders.LoadedModel`."""
    d = load_drafter(drafter, target, weight_type=weight_type)
    return None if d is None else Eagle3Proposer(d)


register_proposer(Eagle3Proposer.family, load)
