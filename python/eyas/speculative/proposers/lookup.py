"""The "lookup" family: no drafter model, only copies of earlier text (`eyas.speculative.lookup`).

Any target gets it, so a model with no drafter still gains where its text repeats (a summary quoting
its document, code reusing its names); where nothing repeats every round is a plain step. It is
also what `drafter="default"` runs when no bundled drafter fits the target (`proposers/eagle3.py`).
"""

from __future__ import annotations

from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import Proposer, fail, register_proposer
from eyas.speculative.rounds import DraftTree


class LookupProposer(Proposer):
    """Drafts nothing itself: the generator's adaptive policy drafts copies of earlier text, and
    every other round is a plain step. Needs no target features."""

    family = "lookup"
    drafts = False
    aux_layers: list[int] = []
    feature_layers: list[int] = []
    policy = TreePolicy.auto()

    def reset(self, capacity: int) -> None:
        pass

    def ingest(self, features, tokens) -> None:
        pass

    # It keeps no per-pair state, so a cached prompt is reusable up to any length (prompt caching).
    @property
    def length(self) -> int:
        return 2**31 - 1

    def truncate(self, n: int) -> None:
        pass

    def propose(self, policy: TreePolicy) -> DraftTree:
        fail("the lookup family has no drafter: its rounds draft copies of earlier text (tree 'auto') or none")


def load(drafter, target) -> LookupProposer | None:
    """drafter: "default" (copies need no checkpoint); a checkpoint path makes no sense here."""
    if not (isinstance(drafter, str) and drafter == "default"):
        fail(f"the lookup family takes no drafter checkpoint (got {drafter!r}); pass drafter='default'")
    return LookupProposer()


register_proposer(LookupProposer.family, load)
