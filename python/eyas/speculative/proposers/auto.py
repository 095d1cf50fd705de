"""The "auto" family: one sub-proposer drafts each round, chosen per request from measured acceptance.

Each request (a `reset`, or a `truncate` that starts the next sequence) probes every family for a few
rounds in turn, then drafts with the family that accepted the most tokens per round, giving the
others a round now and then (`FamilyChooser`) in case the content changes. The choice depends only
on acceptance counts, never on time, so under sampling a seed's output never depends on the load.

Only the drafting family ingests: the others queue the pairs and ingest them when their turn comes
(one batched catch-up, cheaper per pair than a round's), so auto pays about one drafter's ingest
per round, not every drafter's.
"""

from __future__ import annotations

import numpy as np

from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import fail, register_proposer
from eyas.speculative.proposers.multi import MultiProposer, combined_factory
from eyas.speculative.rounds import DraftTree


class FamilyChooser:
    """Which of n families drafts each round of one request: `choose()` before a round, `observe()`
    after it. Deterministic: a function of the accepted counts alone."""

    PROBE_ROUNDS = 2  # rounds per family at the start, in turn: the first acceptance to compare
    REPROBE_EVERY = 16  # then every this many rounds one round of another family, in turn

    def __init__(self, n: int):
        if n < 1:
            fail("FamilyChooser needs at least one family")
        self.n = n
        self.rounds = [0] * n  # rounds observed per family
        self.accepted = [0] * n  # drafted tokens the target accepted, per family
        self._round = 0  # rounds chosen so far
        self._reprobes = 0

    def mean(self, i: int) -> float:
        """Accepted drafted tokens per round of family i (0 before its first round)."""
        return self.accepted[i] / self.rounds[i] if self.rounds[i] else 0.0

    def best(self) -> int:
        """The family with the most accepted tokens per round; ties go to the earlier family."""
        return max(range(self.n), key=lambda i: (self.mean(i), -i))

    def choose(self) -> int:
        r = self._round
        self._round += 1
        probing = self.PROBE_ROUNDS * self.n
        if r < probing:
            return r % self.n
        best = self.best()
        if self.n > 1 and (r - probing + 1) % self.REPROBE_EVERY == 0:
            others = [i for i in range(self.n) if i != best]
            self._reprobes += 1
            return others[(self._reprobes - 1) % len(others)]
        return best

    def observe(self, i: int, accepted: int) -> None:
        self.rounds[i] += 1
        self.accepted[i] += int(accepted)


class AutoProposer(MultiProposer):
    family = "auto"

    def __init__(self, subs, feature_layers=None):
        super().__init__(subs, feature_layers)
        self._clear()
        self._new_request()

    def _clear(self) -> None:
        # Pairs each family has not ingested yet, as (features over our layers, tokens) parts, and how
        # many it was given since the last reset (a family whose length is less cannot keep them all).
        self._backlog: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in self.subs}
        self._given = dict.fromkeys(self.subs, 0)

    def _new_request(self) -> None:
        self.chooser = FamilyChooser(len(self.subs))
        self.drafting: str | None = None  # the family that drafts the coming propose (chosen at its ingest)
        self._proposed: str | None = None  # the family whose tree the generator verifies now

    def reset(self, capacity: int) -> None:
        super().reset(capacity)
        self._clear()
        self._new_request()

    def _kept(self, name: str) -> int:
        """Pairs family `name` can keep: those it holds, then its backlog if it holds all it was given."""
        held = self.subs[name].length
        return held + _pairs(self._backlog[name]) if held == self._given[name] else held

    @property
    def length(self) -> int:
        return min(self._kept(name) for name in self.subs)

    def truncate(self, n: int) -> None:
        if not isinstance(n, int) or not 0 <= n <= self.length:
            fail(f"truncate({n!r}) outside [0, {self.length}]")
        for name, p in self.subs.items():
            if n <= p.length:
                p.truncate(n)
                self._backlog[name], self._given[name] = [], n
            else:  # the family keeps what it ingested and the first pairs of its backlog
                self._backlog[name] = _first_pairs(self._backlog[name], n - p.length)
        self._new_request()  # the generator truncates only to start the next sequence

    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        if self.drafting is None:
            self.drafting = self._family(self.chooser.choose())
        for parts in self._backlog.values():
            parts.append((features, tokens))
        self._catch_up(self.drafting)

    def propose(self, policy: TreePolicy) -> DraftTree:
        if self.drafting is None:  # a driver that proposes twice without ingesting in between
            self.drafting = self._family(self.chooser.choose())
        name, self.drafting = self.drafting, None
        self._catch_up(name)
        self._proposed = name
        return self.subs[name].propose(policy)

    def observe(self, accepted: int, drafted_depth: int) -> None:
        if self._proposed is None:
            return
        self.chooser.observe(self.families.index(self._proposed), accepted)
        self.subs[self._proposed].observe(accepted, drafted_depth)
        self._proposed = None

    def _family(self, i: int) -> str:
        return self.families[i]

    def _catch_up(self, name: str) -> None:
        """Family `name` ingests its backlog in one call."""
        parts = self._backlog[name]
        if not parts:
            return
        self._backlog[name] = []
        features = parts[0][0] if len(parts) == 1 else np.concatenate([f for f, _ in parts])
        tokens = parts[0][1] if len(parts) == 1 else np.concatenate([t for _, t in parts])
        self.subs[name].ingest(self.features_for(name, features), tokens)
        self._given[name] += len(tokens)


def _pairs(parts) -> int:
    return sum(len(t) for _, t in parts)


def _first_pairs(parts, n: int):
    """The first n pairs of backlog `parts`."""
    out = []
    for features, tokens in parts:
        if n <= 0:
            break
        out.append((features[:n], tokens[:n]))
        n -= len(tokens)
    return out


register_proposer(AutoProposer.family, combined_factory(AutoProposer))
