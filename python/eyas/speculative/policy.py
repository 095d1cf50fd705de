"""Tree shape of a speculative round (EAGLE-2 dynamic tree, reference eagle3.md §4.1)."""

from __future__ import annotations

import dataclasses
import math


def fail(msg: str) -> None:
    raise ValueError(f"[speculative] {msg}")


@dataclasses.dataclass(frozen=True)
class TreePolicy:
    """top_k: branching and frontier width; depth: max drafted tokens on a path; total_tokens: tree
    size incl. the root (EAGLE's `total_token`). top_k = 1 gives a chain of `depth` tokens.

    adaptive (chains only): each round drafts 0..depth tokens, whichever the recent acceptance and
    the round costs say pays best (`eyas.speculative.adaptive`; costs measured under greedy decoding, a
    fixed model under sampling). The default is `auto()`, an adaptive chain of up to 7 (the steps the
    bundled drafter is trained to unroll): on the 2-core CPUs measured a target forward over N tree
    nodes costs about 1.2-3.5x a decode step for N = 4-16, and a wide tree's drafting more, so width
    buys less than it costs, while a chain goes only as deep as its measured acceptance pays
    (docs/speculative.md §3, docs/performance.md).

    lookup (adaptive only): rounds may also draft a copy of what followed the latest earlier
    occurrence of the last few tokens (`eyas.speculative.lookup`), when one exists and pays; on by
    default, `auto:...:nolookup` drafts from the drafter alone.

    min_prob: nodes whose draft probability (the product of the drafter's probabilities along the
    path) is below it are neither drafted further nor verified, but for the likeliest first token (a
    round drafts at least one). The bundled drafter's path probability tracks how often the target
    accepts the path, yet with `auto` choosing depths from measured acceptance a floor measured no
    faster (docs/speculative.md §8), so the default is 0: every node kept. "auto@0.3" sets one."""

    top_k: int = 1
    depth: int = 3
    total_tokens: int = 4
    adaptive: bool = False
    lookup: bool = False
    min_prob: float = 0.0

    def __post_init__(self):
        for name, lo, hi in (("top_k", 1, 256), ("depth", 1, 64), ("total_tokens", 2, 1024)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                fail(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")
        for name in ("adaptive", "lookup"):
            if not isinstance(getattr(self, name), bool):
                fail(f"{name} must be a bool, got {getattr(self, name)!r}")
        p = self.min_prob
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
            fail(f"min_prob must be a number in [0, 1), got {p!r}")
        if self.lookup and not self.adaptive:
            fail("lookup drafts need an adaptive policy (auto)")
        if self.adaptive and (self.top_k != 1 or self.total_tokens != self.depth + 1):
            fail("an adaptive policy must be a chain (top_k 1, total_tokens = depth + 1)")

    @property
    def min_log_prob(self) -> float:
        """min_prob as the drafters' cumulative log-prob floor (-inf: no floor)."""
        return math.log(self.min_prob) if self.min_prob > 0 else -math.inf

    @classmethod
    def chain(cls, depth: int, min_prob: float = 0.0) -> "TreePolicy":
        return cls(top_k=1, depth=depth, total_tokens=depth + 1, min_prob=min_prob)

    @classmethod
    def auto(cls, max_depth: int = 7, lookup: bool = True, min_prob: float = 0.0) -> "TreePolicy":
        return cls(top_k=1, depth=max_depth, total_tokens=max_depth + 1, adaptive=True, lookup=lookup,
                   min_prob=min_prob)

    @classmethod
    def parse(cls, text: str) -> "TreePolicy":
        """"TOP_K,DEPTH,TOTAL" (e.g. "4,5,16"), "chain:DEPTH", or "auto[:MAX_DEPTH][:nolookup]", each
        optionally followed by "@MIN_PROB" (e.g. "auto@0.3")."""
        if not isinstance(text, str):
            fail(f"tree policy must be a string, got {text!r}")
        shape, at, floor = text.partition("@")
        parts = shape.split(":")
        lookup = parts[-1] != "nolookup"
        try:  # only the syntax here: out-of-range numbers get the constructor's own message
            min_prob = float(floor) if at else 0.0
            if parts[0] == "auto" and len(parts) <= 3 and (lookup or len(parts) > 1):
                depths = [int(x) for x in (parts[1:] if lookup else parts[1:-1])]
                if len(depths) <= 1:
                    return cls.auto(depths[0] if depths else 7, lookup=lookup, min_prob=min_prob)
            elif parts[0] == "chain" and len(parts) == 2:
                return cls.chain(int(parts[1]), min_prob=min_prob)
            elif len(parts) == 1 and shape.count(",") == 2:
                k, d, t = (int(x) for x in shape.split(","))
                return cls(k, d, t, min_prob=min_prob)
        except ValueError as e:
            if str(e).startswith("[speculative]"):
                raise
        fail(f"tree policy {text!r} must be 'TOP_K,DEPTH,TOTAL', 'chain:DEPTH' or 'auto[:MAX_DEPTH][:nolookup]', "
             "optionally followed by '@MIN_PROB'")
