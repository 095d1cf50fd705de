"""The MTP family: the target's own multi-token-prediction block (C++ MtpDrafter, EAGLE-2 dynamic tree
expansion) behind the `Proposer` protocol. It reads the target's final residual, so the target captures
aux layer num_layers and nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from eyas.drafters.checkpoint import fail
from eyas.drafters.mtp import MtpHead, mtp_head
from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import Proposer, register_proposer
from eyas.speculative.rounds import DraftTree


class MtpProposer(Proposer):
    family = "mtp"

    def __init__(self, head: MtpHead):
        self.head = head
        self._runtime = None

    @property
    def aux_layers(self) -> list[int]:
        return [self.head.hidden_layer]

    @property
    def feature_layers(self) -> list[int]:
        return [self.head.hidden_layer]

    def reset(self, capacity: int) -> None:
        self._runtime = self.head.runtime(capacity)
        self._runtime.reset()

    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        self._runtime.ingest(features, tokens)

    @property
    def length(self) -> int:
        return self._runtime.length if self._runtime is not None else 0

    def truncate(self, n: int) -> None:
        self._runtime.truncate(n)

    def fork(self) -> "MtpProposer":
        # The head caches its C++ runtime (the block's KV) per capacity: the fork gets its own over the same weights.
        return MtpProposer(dataclasses.replace(self.head, _runtimes={}))

    def propose(self, policy: TreePolicy) -> DraftTree:
        t = self._runtime.expand(policy.top_k, policy.depth, policy.total_tokens)
        return DraftTree(t["tokens"], t["parents"], t["depths"], t["mask"])


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
