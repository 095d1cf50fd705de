"""Speculation counters in the project's one vocabulary (DESIGN §6)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class SpeculativeMetrics:
    num_drafts: int = 0  # verified rounds
    num_draft_tokens: int = 0  # drafted nodes sent to the target (root excluded)
    num_accepted_tokens: int = 0  # drafted tokens the target accepted (bonus excluded)
    accepted_per_pos: list = dataclasses.field(default_factory=list)  # [d-1]: rounds that accepted depth d
    propose_s: float = 0.0
    verify_s: float = 0.0
    accept_s: float = 0.0

    def observe(self, tree_size: int, accepted: int) -> None:
        self.num_drafts += 1
        self.num_draft_tokens += tree_size - 1
        self.num_accepted_tokens += accepted
        if len(self.accepted_per_pos) < accepted:
            self.accepted_per_pos += [0] * (accepted - len(self.accepted_per_pos))
        for d in range(accepted):
            self.accepted_per_pos[d] += 1

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
            "mean_accepted_length": self.mean_accepted_length,
            "mean_tree_size": 1.0 + self.num_draft_tokens / self.num_drafts if self.num_drafts else 0.0,
            "propose_s": self.propose_s,
            "verify_s": self.verify_s,
            "accept_s": self.accept_s,
        }
