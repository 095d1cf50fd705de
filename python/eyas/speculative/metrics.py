"""Speculation counters in the project's one vocabulary (DESIGN §6)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class SpeculativeMetrics:
    num_drafts: int = 0  # verified rounds
    num_draft_tokens: int = 0  # drafted nodes sent to the target (root excluded)
    num_accepted_tokens: int = 0  # drafted tokens the target accepted (bonus excluded)
    accepted_per_pos: list = dataclasses.field(default_factory=list)  # [d-1]: rounds that accepted depth d
    # [d-1]: rounds that drafted depth d after accepting depth d - 1, so accepted_per_pos[d-1] /
    # tried_per_pos[d-1] is the acceptance rate at depth d given the path got there.
    tried_per_pos: list = dataclasses.field(default_factory=list)
    # Rounds whose drafts were copied from earlier text (eyas.speculative.lookup), included in the above.
    num_lookup_drafts: int = 0
    num_lookup_draft_tokens: int = 0
    num_lookup_accepted_tokens: int = 0
    propose_s: float = 0.0
    verify_s: float = 0.0  # the target's rounds: verify, accept and commit (rounds.advance), plain steps included

    def observe(self, tree_size: int, accepted: int, depth: int | None = None) -> None:
        """depth: the tree's deepest drafted level (default: a chain, tree_size - 1)."""
        depth = tree_size - 1 if depth is None else depth
        self.num_drafts += 1
        self.num_draft_tokens += tree_size - 1
        self.num_accepted_tokens += accepted
        _count(self.accepted_per_pos, accepted)
        _count(self.tried_per_pos, min(depth, accepted + 1))

    def observe_lookup(self, drafted: int, accepted: int) -> None:
        """A round of copied drafts (also given to `observe`)."""
        self.num_lookup_drafts += 1
        self.num_lookup_draft_tokens += drafted
        self.num_lookup_accepted_tokens += accepted

    @property
    def acceptance_per_pos(self) -> list[float]:
        """[d-1]: how often depth d was accepted when it was drafted after an accepted d - 1."""
        return acceptance_rates(self.accepted_per_pos, self.tried_per_pos)

    @property
    def mean_accepted_length(self) -> float:
        """Tokens emitted per round, bonus included (1 + accepted / drafts)."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else 0.0

    def as_dict(self) -> dict:
        return {
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "accepted_per_pos": list(self.accepted_per_pos),
            "tried_per_pos": list(self.tried_per_pos),
            "acceptance_per_pos": self.acceptance_per_pos,
            "mean_accepted_length": self.mean_accepted_length,
            "mean_tree_size": 1.0 + self.num_draft_tokens / self.num_drafts if self.num_drafts else 0.0,
            "num_lookup_drafts": self.num_lookup_drafts,
            "num_lookup_draft_tokens": self.num_lookup_draft_tokens,
            "num_lookup_accepted_tokens": self.num_lookup_accepted_tokens,
            "propose_s": self.propose_s,
            "verify_s": self.verify_s,
        }


def acceptance_rates(accepted_per_pos: list, tried_per_pos: list) -> list[float]:
    """[d-1]: accepted / tried at depth d (0 where depth d was never tried)."""
    return [(accepted_per_pos[d] if d < len(accepted_per_pos) else 0) / t if t else 0.0
            for d, t in enumerate(tried_per_pos)]


def _count(per_pos: list, n: int) -> None:
    """Adds one to per_pos[0:n], growing it as needed."""
    if len(per_pos) < n:
        per_pos += [0] * (n - len(per_pos))
    for d in range(n):
        per_pos[d] += 1
