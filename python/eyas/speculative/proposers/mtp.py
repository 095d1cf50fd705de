"""The MTP family: the target's own multi-token-prediction block (C++ MtpDrafter, EAGLE-2 dynamic tree
expansion) behind the `Proposer` protocol. It reads the target's final residual, so the target captures
aux layer num_layers and nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from eyas.drafters.checkpoint import fail
from eyas.drafters.mtp import MtpHead, mtp_head
from eyas.speculative.proposer import RuntimeProposer, register_proposer


class MtpProposer(RuntimeProposer):
    family = "mtp"

    def __init__(self, head: MtpHead):
        self.head = head

    @property
    def aux_layers(self) -> list[int]:
        return [self.head.hidden_layer]

    @property
    def feature_layers(self) -> list[int]:
        return [self.head.hidden_layer]

    def make_runtime(self, capacity: int):
        return self.head.runtime(capacity)

    def fork(self) -> "MtpProposer":
        # The head caches its C++ runtime (the block's KV) per capacity: the fork gets its own over the same weights.
        return MtpProposer(dataclasses.replace(self.head, _runtimes={}))


def load(drafter, target, **_options) -> MtpProposer:
    """drafter: "default" (the target's own MTP block; the family has no checkpoint of its own) or an
    `MtpHead`; target: an `eyas.loaders.LoadedModel`."""
    if isinstance(drafter, MtpHead):
        return MtpProposer(drafter)
    if drafter != "default":
        fail(f"drafter family 'mtp' drafts with the model's own MTP block and takes no drafter checkpoint "
             f"(got {drafter!r}); pass drafter 'default'")
    return MtpProposer(mtp_head(target.spec, target.weights, Path(target.path).name))


register_proposer(MtpProposer.family, load)
