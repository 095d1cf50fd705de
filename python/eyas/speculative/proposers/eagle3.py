"""The EAGLE-3 family: the C++ Eagle3Drafter (one layer over three target layers' features,
EAGLE-2 dynamic tree expansion) behind the `Proposer` protocol."""

from __future__ import annotations

import dataclasses

from eyas.drafters.eagle3 import Drafter
from eyas.speculative.loading import bundled_drafter_for, load_drafter, log
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


def load(drafter, target, *, weight_type: str = "q8_0"):
    """drafter: a checkpoint folder, "default" (the bundled drafter that fits; when none does, the
    "lookup" family: copies of earlier text, no drafter) or a loaded `Drafter`; target: an
    `eyas.loaders.LoadedModel`."""
    d = load_drafter(drafter, target, weight_type=weight_type)
    if d is None and isinstance(drafter, str) and drafter == "default":
        from eyas.speculative.proposers.lookup import LookupProposer

        log.info("drafting copies of earlier text only (the lookup family)")
        return LookupProposer()
    return None if d is None else Eagle3Proposer(d)


class HassProposer(Eagle3Proposer):
    """HASS drafters have EAGLE-3's architecture and checkpoint layout (only the training differs:
    hass_and_user_asks.md Part A2), so the family runs the same C++ drafter; "default" is the bundled
    HASS drafter (drafters/bundled/hass/)."""

    family = "hass"

    def fork(self) -> "HassProposer":
        return HassProposer(dataclasses.replace(self.drafter, _runtimes={}))


def load_hass(drafter, target, *, weight_type: str = "q8_0") -> HassProposer | None:
    """drafter: an EAGLE-3-layout checkpoint folder trained with HASS, "default" (the bundled HASS drafter
    that fits; None if none does) or a loaded `Drafter`."""
    if isinstance(drafter, str) and drafter == "default":
        folder = bundled_drafter_for(target.spec, "hass")
        if folder is None:
            log.info("no bundled HASS drafter fits this target; using plain decoding")
            return None
        drafter = folder
    d = load_drafter(drafter, target, weight_type=weight_type)
    return None if d is None else HassProposer(d)


register_proposer(Eagle3Proposer.family, load)
register_proposer(HassProposer.family, load_hass)
