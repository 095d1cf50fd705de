"""`MultiProposer`: the shared base of families that combine other families ("parallel", "auto").

The target captures one set of aux layers per sequence, so a multi proposer asks for the union of
its sub-proposers' feature layers (sorted: the generator hands features over in that order, each
layer H columns wide) and gives each sub-proposer only its own layers' columns, in its own order.
It never uses lazy target logits (target_head None): they need the target's final state right
after the features, which the union does not keep in place for any one sub-proposer.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import PLAIN, Proposer, check_family, fail, make_proposer
from eyas.speculative.rounds import DraftTree

DEFAULT_FAMILIES = ("eagle3", "hydra")


class MultiProposer(Proposer):
    """subs: {family: Proposer}, in the order ties between them are broken. feature_layers: the
    layers the target captures (default: the sorted union of the subs'; a pinned view passes its
    parent's). policy: the first sub-proposer's recommendation that is not None."""

    target_head = None

    def __init__(self, subs: dict[str, Proposer], feature_layers: list[int] | None = None):
        if not subs:
            fail(f"{type(self).__name__} needs at least one sub-proposer")
        self.subs = dict(subs)
        union = sorted({int(layer) for p in self.subs.values() for layer in p.feature_layers})
        layers = union if feature_layers is None else [int(layer) for layer in feature_layers]
        missing = sorted(set(union) - set(layers))
        if missing:
            fail(f"feature layers {layers} miss layers {missing} that the sub-proposers read")
        self.aux_layers, self.feature_layers = list(layers), list(layers)
        # Per sub-proposer: its layers' positions in ours (None: all of ours, in order: no copy needed).
        self._columns = {name: self._positions(p.feature_layers) for name, p in self.subs.items()}
        self.policy = next((p.policy for p in self.subs.values() if p.policy is not None), None)
        self._pinned: dict[str, Proposer] = {}

    @property
    def families(self) -> list[str]:
        """The sub-proposers' families, in order."""
        return list(self.subs)

    def _positions(self, layers: list[int]) -> list[int] | None:
        positions = [self.feature_layers.index(int(layer)) for layer in layers]
        return None if positions == list(range(len(self.feature_layers))) else positions

    def features_for(self, family: str, features: np.ndarray) -> np.ndarray:
        """The columns of `features` (F32[m, len(feature_layers) * H]) that sub-proposer `family` reads."""
        positions = self._columns[family]
        if positions is None:
            return features
        m, width = features.shape
        n = len(self.feature_layers)
        if width % n:
            fail(f"features are {width} wide, not a multiple of the {n} feature layers")
        h = width // n
        if positions == list(range(positions[0], positions[0] + len(positions))):
            # A run of layers is a column range: one row-by-row copy, several times faster than the
            # gather below on a long prompt's features (17 MB for a 2.5K-token document).
            return np.ascontiguousarray(features[:, positions[0] * h:(positions[-1] + 1) * h])
        return np.ascontiguousarray(features.reshape(m, n, h)[:, positions, :].reshape(m, -1))

    def reset(self, capacity: int) -> None:
        for p in self.subs.values():
            p.reset(capacity)

    @property
    def length(self) -> int:
        return min(p.length for p in self.subs.values())

    def truncate(self, n: int) -> None:
        if not isinstance(n, int) or not 0 <= n <= self.length:
            fail(f"truncate({n!r}) outside [0, {self.length}]")
        for p in self.subs.values():
            p.truncate(n)

    def fork(self) -> "MultiProposer":
        return type(self)({name: p.fork() for name, p in self.subs.items()}, self.feature_layers)

    def pinned(self, family: str) -> Proposer:
        """A proposer that drafts with sub-proposer `family` alone, over this proposer's feature layers
        (so the same target serves it), sharing that sub-proposer and its state. The same object each
        time, so a caller can tell whether the sub-proposer's state is still its own (the server's prompt
        cache)."""
        if family not in self.subs:
            fail(f"{self.family!r} drafts with {', '.join(self.subs)}, not {family!r}")
        if family not in self._pinned:
            self._pinned[family] = Pinned({family: self.subs[family]}, self.feature_layers)
        return self._pinned[family]


class Pinned(MultiProposer):
    """One sub-proposer of a `MultiProposer` on its own, reading its columns of the parent's features."""

    @property
    def family(self) -> str:
        return next(iter(self.subs))

    @property
    def sub(self) -> Proposer:
        return self.subs[self.family]

    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        self.sub.ingest(self.features_for(self.family, features), tokens)

    def propose(self, policy: TreePolicy) -> DraftTree:
        return self.sub.propose(policy)

    def observe(self, accepted: int, drafted_depth: int) -> None:
        self.sub.observe(accepted, drafted_depth)


def combined_factory(cls: type[MultiProposer]) -> Callable[..., Proposer | None]:
    """The registry factory of a combining family: factory(drafter, target, families=..., **options)
    builds each family of `families` through the registry. drafter: "default" (every family's bundled
    drafter) or {family: drafter}; families: a list or "a,b" (default: the mapping's keys, else
    DEFAULT_FAMILIES). A family that gives None (nothing bundled for this target) is left out; none
    left is plain decoding (None), one left is that family's proposer itself. options (e.g.
    weight_type) go to every sub-family."""

    def factory(drafter, target, *, families=None, **options) -> Proposer | None:
        if families is None:
            families = list(drafter) if isinstance(drafter, dict) else DEFAULT_FAMILIES
        if isinstance(families, str):
            families = [f.strip() for f in families.split(",") if f.strip()]
        families = list(families)
        if not families or len(set(families)) != len(families):
            fail(f"{cls.family!r} needs distinct sub-families, got {families}")
        for name in families:
            check_family(name)
            if name == PLAIN or name in COMBINING:
                fail(f"{cls.family!r} cannot combine family {name!r}; name drafter families such as "
                     f"{', '.join(DEFAULT_FAMILIES)}")
        if isinstance(drafter, dict):
            unknown = sorted(set(drafter) - set(families))
            if unknown:
                fail(f"drafters given for families {unknown} that {cls.family!r} does not combine ({families})")
            drafters = {name: drafter.get(name, "default") for name in families}
        elif drafter == "default":
            drafters = dict.fromkeys(families, "default")
        else:
            fail(f"drafter family {cls.family!r} takes drafter 'default' (each family's bundled drafter) or a "
                 f"{{family: drafter}} mapping, not {drafter!r}")
        subs = {}
        for name in families:
            p = make_proposer(name, drafters[name], target, **options)
            if p is not None:
                subs[name] = p
        if len(subs) <= 1:
            return next(iter(subs.values()), None)
        return cls(subs)

    COMBINING.add(cls.family)
    return factory


# The combining families: none of them can be a sub-family of another (no nesting).
COMBINING: set[str] = set()
