"""The "parallel" family: every sub-proposer drafts every round, and their trees are merged into one
(`tree_merge.merge_trees`) that the target verifies once. Drafters that guess right on different
content then both help, for the price of every drafter's ingest and propose each round."""

from __future__ import annotations

import numpy as np

from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import register_proposer
from eyas.speculative.proposers.multi import MultiProposer, combined_factory
from eyas.speculative.rounds import DraftTree
from eyas.speculative.tree_merge import merge_trees


class ParallelProposer(MultiProposer):
    family = "parallel"

    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        for name, p in self.subs.items():
            p.ingest(self.features_for(name, features), tokens)

    def propose(self, policy: TreePolicy) -> DraftTree:
        # Each drafter gets the whole node budget: the merge keeps the best total_tokens of all of them.
        return merge_trees([p.propose(policy) for p in self.subs.values()], policy.total_tokens)

    # observe stays a no-op: the accepted path mixes the drafters' nodes, so it is no one drafter's acceptance.


register_proposer(ParallelProposer.family, combined_factory(ParallelProposer))
