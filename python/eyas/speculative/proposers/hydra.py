"""The Hydra family: Hydra++ draft heads (C++ HydraDrafter: a prefix attention block over the target's
final states, then one small MLP head per tree depth that sees the tokens drafted before it) behind
the `Proposer` protocol. The heads run no attention, so a tree level costs a few small matmuls."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from eyas.drafters.checkpoint import fail
from eyas.drafters.hydra import HydraDrafter, is_hydra, load_hydra
from eyas.speculative.loading import bundled_drafter_for, log
from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import RuntimeProposer, register_proposer


class HydraProposer(RuntimeProposer):
    family = "hydra"

    def __init__(self, drafter: HydraDrafter):
        self.drafter = drafter
        self.policy = TreePolicy(*drafter.tree_policy) if drafter.tree_policy is not None else None

    @property
    def aux_layers(self) -> list[int]:
        return self.drafter.feature_layers

    @property
    def feature_layers(self) -> list[int]:
        return self.drafter.feature_layers

    @property
    def max_depth(self) -> int:
        """The deepest tree the heads draft (one head per depth)."""
        return self.drafter.config.num_draft_heads

    def make_runtime(self, capacity: int):
        return self.drafter.runtime(capacity)

    def propose(self, policy: TreePolicy):
        if policy.depth > self.max_depth:  # the heads end there: cap the tree instead of failing
            policy = dataclasses.replace(policy, depth=self.max_depth)
        return super().propose(policy)

    def fork(self) -> "HydraProposer":
        return HydraProposer(dataclasses.replace(self.drafter, _runtimes={}))


def load(drafter, target, *, weight_type: str = "q8_0") -> HydraProposer | None:
    """drafter: a Hydra checkpoint folder, "default" (the bundled Hydra drafter that fits the target;
    None if none does) or a loaded `HydraDrafter`; target: an `eyas.loaders.LoadedModel`."""
    if isinstance(drafter, HydraDrafter):
        return HydraProposer(drafter)
    if drafter == "default":
        folder = bundled_drafter_for(target.spec, "hydra")
        if folder is None:
            log.info("no bundled Hydra drafter fits this target; using plain decoding")
            return None
    else:
        folder = Path(drafter)
        if folder.is_dir() and not is_hydra(folder):
            fail(f"{folder} is not a Hydra drafter (config.json architectures); use its own family, e.g. 'eagle3'")
    return HydraProposer(load_hydra(folder, target.spec, target.weights, weight_type))


register_proposer(HydraProposer.family, load)
