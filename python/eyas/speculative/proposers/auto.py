"""The "auto" family: one sub-proposer drafts each round, chosen per request from measured acceptance.

Each request (a `reset`, or a `truncate` that starts the next sequence) drafts with the first listed
family; only when it drafts poorly are the others tried for a few rounds each, and one replaces it
only when it accepted clearly more tokens per round; the others then get a round now and then,
less and less often (`FamilyChooser`), in case the content changes. The choice depends only
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
    after it. Deterministic: a function of the accepted counts alone. Family 0 is the default one
    (the first listed): the others are tried only when it drafts poorly, and replace it only when
    they accept clearly more (a family's first round ingests the whole prompt: on a long one, trying
    a family costs more than a few rounds of drafting)."""

    PROBE_ROUNDS = 2  # rounds another family drafts before it is judged
    FIRST_ROUNDS = 6  # ...and family 0 (the first rounds of an answer are its hardest tokens)
    # Share of its drafted tokens accepted at which family 0 is kept without trying the others (per
    # drafted token, not per round: on long documents the depth chooser drafts one token a round).
    # Low: a trial's prompt ingest cost 5-15 % on the E7 workloads where the bundled EAGLE-3 drafter
    # accepts 0.35-0.9 and no other family did better (docs/speculative.md §12).
    GOOD = 0.3
    REPROBE_FIRST = 16  # once all are tried: one round of another family (in turn) after this many...
    REPROBE_MAX = 128  # ...the gap doubling up to this while the choice stands and drafts well
    # Another family replaces family 0 only when it scores (1 + MARGIN) times family 0's score plus
    # MARGIN_RATE: a few rounds are noisy, and a switch to a worse family costs more than staying
    # with a slightly worse one.
    MARGIN = 0.2
    MARGIN_RATE = 0.02
    # Each family's rate starts as this many drafted tokens at the rate of all rounds so far: two probe
    # rounds alone (often the hard first tokens of an answer) let one lucky round decide a request.
    PRIOR_TOKENS = 6.0
    DECAY = 0.95  # per round of a family: its recent rounds weigh more (content changes within an answer)

    def __init__(self, n: int):
        if n < 1:
            fail("FamilyChooser needs at least one family")
        self.n = n
        self.drafted = [0.0] * n  # decayed drafted tokens (on the verified path's depth) per family
        self.accepted = [0.0] * n  # ... and how many of them the target accepted
        self.chosen = [0] * n  # rounds given per family
        self.reprobes = 0  # rounds given to a family other than the best once all were tried
        self._gap = self.REPROBE_FIRST
        self._next: int | None = None  # round of the next re-probe
        self._current = None  # the best family at the last choice

    def rate(self, i: int) -> float:
        """Share of family i's drafted tokens accepted, recent rounds weighing more (0 before its first)."""
        return self.accepted[i] / self.drafted[i] if self.drafted[i] else 0.0

    def score(self, i: int) -> float:
        """Family i's rate shrunk towards the rate of every family's rounds."""
        total = sum(self.drafted)
        pooled = sum(self.accepted) / total if total else 0.0
        return (self.accepted[i] + self.PRIOR_TOKENS * pooled) / (self.drafted[i] + self.PRIOR_TOKENS)

    def best(self) -> int:
        """The best-scoring family if it clearly beats family 0 (MARGIN), else family 0; ties go to
        the earlier family."""
        top = max(range(self.n), key=lambda i: (self.score(i), -i))
        return top if self.score(top) > (1 + self.MARGIN) * self.score(0) + self.MARGIN_RATE else 0

    def choose(self) -> int:
        i = self._choose()
        self.chosen[i] += 1
        return i

    def _choose(self) -> int:
        r = sum(self.chosen)  # rounds chosen before this one
        untried = [i for i in range(self.n) if self.chosen[i] < (self.PROBE_ROUNDS if i else self.FIRST_ROUNDS)]
        if 0 in untried:
            return 0
        if untried:
            trying = any(self.chosen[1:])  # once another family is tried, every one gets its rounds
            return untried[0] if trying or self.rate(0) < self.GOOD else 0
        best = self.best()
        if self._next is None:
            self._next = r + self.REPROBE_FIRST - 1
        if best != self._current:
            if self._current is not None:  # the choice changed: watch the others closely again
                self._gap = self.REPROBE_FIRST
                self._next = r + self._gap
            self._current = best
        if self.n > 1 and r >= self._next:
            others = [i for i in range(self.n) if i != best]
            self.reprobes += 1
            # Back off only while the choice drafts well: a poor one may be the luck of its first rounds.
            self._gap = min(2 * self._gap, self.REPROBE_MAX) if self.rate(best) >= self.GOOD else self.REPROBE_FIRST
            self._next = r + self._gap
            return others[(self.reprobes - 1) % len(others)]
        return best

    def observe(self, i: int, accepted: int, drafted: int) -> None:
        """Family i drafted a tree `drafted` deep; the target accepted `accepted` of its tokens."""
        self.drafted[i] = self.DECAY * self.drafted[i] + max(int(drafted), int(accepted), 1)
        self.accepted[i] = self.DECAY * self.accepted[i] + int(accepted)


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
            self.drafting = self.families[self.chooser.choose()]
        for parts in self._backlog.values():
            parts.append((features, tokens))
        self.caught_up = len(self._backlog[self.drafting]) > 1  # pairs from rounds it did not draft
        self._catch_up(self.drafting)

    def propose(self, policy: TreePolicy) -> DraftTree:
        if self.drafting is None:  # a driver that proposes twice without ingesting in between
            self.drafting = self.families[self.chooser.choose()]
        name, self.drafting = self.drafting, None
        self._catch_up(name)
        self._proposed = name
        return self.subs[name].propose(policy)

    def observe(self, accepted: int, drafted_depth: int) -> None:
        if self._proposed is None:
            return
        self.chooser.observe(self.families.index(self._proposed), accepted, drafted_depth)
        self.subs[self._proposed].observe(accepted, drafted_depth)
        self._proposed = None

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
