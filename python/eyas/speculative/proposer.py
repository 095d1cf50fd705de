"""Drafters behind one protocol: a `Proposer` proposes a draft tree per round and ingests what the
target accepted; a registry maps a family name ("eagle3", ...) to a factory, so the generator never
knows which family it runs (DESIGN §8).

    proposer = make_proposer("eagle3", "default", loaded_model)   # None: plain decoding
"""

from __future__ import annotations

import abc
import copy
from typing import Callable

import numpy as np

from eyas.speculative.policy import TreePolicy
from eyas.speculative.rounds import DraftTree

PLAIN = "none"  # the family name that means plain decoding (no proposer)


def fail(msg: str) -> None:
    raise ValueError(f"[speculative] {msg}")


class Proposer(abc.ABC):
    """One drafter family. Per round the generator hands it the newly committed (target feature,
    next token) pairs, then asks for a tree rooted at the last of those tokens.

    aux_layers: the target layers (input-of-layer ids) the target must capture, as the
    Transformer's `aux_layers`; the first len(feature_layers) of them are the features `ingest` reads.
    policy: the tree policy the proposer recommends (None: the generator's default).
    target_head: optional (output norm F32[H], output weight, rms_eps) of the target; when the
    target also captures its final state (aux id = num_layers), verify skips the lm_head and
    accept computes logits only for the nodes it visits.
    """

    family: str = ""
    aux_layers: list[int]  # required of every family
    feature_layers: list[int]  # required of every family
    policy: TreePolicy | None = None
    target_head: tuple | None = None
    # False for a family with no drafter of its own ("lookup"): the generator never asks it to propose,
    # and its rounds are copies of earlier text or plain steps.
    drafts: bool = True
    # True when the last `ingest` also took pairs held back from earlier rounds (a family that drafts
    # only now and then catching up): that time is not what a round costs, so the generator leaves it
    # out of the depth chooser's cost measurements.
    caught_up: bool = False

    @abc.abstractmethod
    def reset(self, capacity: int) -> None:
        """Forget every ingested pair; the next sequence holds at most `capacity` tokens."""

    @abc.abstractmethod
    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        """features: F32[m, len(feature_layers) * H] target features of the next m committed
        positions; tokens: I32[m] the token that follows each of them."""

    @abc.abstractmethod
    def propose(self, policy: TreePolicy) -> DraftTree:
        """A draft tree rooted at the last ingested token, within `policy`'s shape (nodes under its
        `min_prob` may be left out: the generator drops any that remain, by `scores`)."""

    def observe(self, accepted: int, drafted_depth: int) -> None:
        """After each drafted round: the target accepted `accepted` of the tokens on the tree's best
        path, out of a tree `drafted_depth` deep. Families that adapt to acceptance (e.g. "auto"
        choosing among drafters) read it; the others ignore it."""

    # Prompt caching and serving several sequences; the defaults are always correct, only slower
    # (a family that keeps no per-pair state to reuse reports length 0, so the generator resets it).

    @property
    def length(self) -> int:
        """Pairs ingested since the last reset that `truncate` can keep (0: nothing reusable)."""
        return 0

    def truncate(self, n: int) -> None:
        """Keep the first n ingested pairs (n <= length)."""
        if n != 0:
            fail(f"{type(self).__name__} cannot keep {n} ingested pairs (its length is 0)")

    def fork(self) -> "Proposer":
        """A proposer over the same weights with its own sequence state, for a second concurrent sequence."""
        return copy.deepcopy(self)


_FACTORIES: dict[str, Callable[..., Proposer | None]] = {}


class RuntimeProposer(Proposer):
    """A proposer whose drafting runs in a C++ runtime (its own KV cache, EAGLE-2 tree expansion):
    ingest, length, truncate and propose go to the runtime that `make_runtime(capacity)` builds.

    The runtime reads at most the last `PROMPT_WINDOW` pairs of what it is first given (a prompt): its
    own prefill of a long document (one layer over every position, ~1/15 of the target's prefill on
    the 2-core CPU, paid before the first draft) would cost more than the drafts save there, and its
    guesses lean on recent context (the target's features carry the rest). The skipped pairs still
    count in `length`; the runtime's positions start after them (rope sees relative positions only)."""

    PROMPT_WINDOW = 1024

    _runtime = None
    _skipped = 0  # leading pairs of the sequence the runtime never read

    @abc.abstractmethod
    def make_runtime(self, capacity: int):
        """The C++ runtime for sequences of up to `capacity` positions."""

    def reset(self, capacity: int) -> None:
        self._runtime = self.make_runtime(capacity)
        self._runtime.reset()
        self._skipped = 0

    def ingest(self, features: np.ndarray, tokens: np.ndarray) -> None:
        if self._runtime.length == 0 and len(tokens) > self.PROMPT_WINDOW:
            skip = len(tokens) - self.PROMPT_WINDOW
            self._skipped += skip
            features, tokens = features[skip:], tokens[skip:]
        self._runtime.ingest(features, tokens)

    @property
    def length(self) -> int:
        return self._skipped + self._runtime.length if self._runtime is not None else 0

    def truncate(self, n: int) -> None:
        if not isinstance(n, int) or not 0 <= n <= self.length:
            fail(f"truncate({n!r}) outside [0, {self.length}]")
        if n >= self._skipped:
            self._runtime.truncate(n - self._skipped)
        else:  # back inside the skipped part: the runtime starts again after n skipped pairs
            self._runtime.reset()
            self._skipped = n

    def propose(self, policy: TreePolicy) -> DraftTree:
        t = self._runtime.expand(policy.top_k, policy.depth, policy.total_tokens, policy.min_log_prob)
        return DraftTree(t["tokens"], t["parents"], t["depths"], t["mask"], t.get("scores"))


def register_proposer(family: str, factory: Callable[..., Proposer | None]) -> None:
    """factory(drafter, target, **options) -> Proposer, or None when `drafter` asks for none
    (e.g. "default" with nothing bundled for this target). target: an `eyas.loaders.LoadedModel`."""
    if not isinstance(family, str) or not family or family == PLAIN:
        fail(f"cannot register a proposer family named {family!r}")
    _FACTORIES[family] = factory


def families() -> list[str]:
    """Every accepted --drafter-family value: the registered families, then "none"."""
    _register_builtins()
    return sorted(_FACTORIES) + [PLAIN]


def check_family(family) -> str:
    if family not in families():
        fail(f"unknown drafter family {family!r}; choose one of {', '.join(families())}")
    return family


def make_proposer(family: str, drafter, target, **options) -> Proposer | None:
    """The proposer of `family` for `drafter` (a path, "default", or a loaded drafter) on `target`;
    None for family "none" or drafter "none"/None (plain decoding)."""
    check_family(family)
    if family == PLAIN or drafter is None or (isinstance(drafter, str) and drafter.lower() == PLAIN):
        return None
    return _FACTORIES[family](drafter, target, **options)


def _register_builtins() -> None:
    import eyas.speculative.proposers  # noqa: F401  (each module registers its family on import)
