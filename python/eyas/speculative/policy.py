"""Tree shape of a speculative round (EAGLE-2 dynamic tree, reference eagle3.md §4.1)."""

from __future__ import annotations

import dataclasses


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
    default, `auto:...:nolookup` drafts from the drafter alone."""

    top_k: int = 1
    depth: int = 3
    total_tokens: int = 4
    adaptive: bool = False
    lookup: bool = False

    def __post_init__(self):
        for name, lo, hi in (("top_k", 1, 256), ("depth", 1, 64), ("total_tokens", 2, 1024)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                fail(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")
        for name in ("adaptive", "lookup"):
            if not isinstance(getattr(self, name), bool):
                fail(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.lookup and not self.adaptive:
            fail("lookup drafts need an adaptive policy (auto)")
        if self.adaptive and (self.top_k != 1 or self.total_tokens != self.depth + 1):
            fail("an adaptive policy must be a chain (top_k 1, total_tokens = depth + 1)")

    @classmethod
    def chain(cls, depth: int) -> "TreePolicy":
        return cls(top_k=1, depth=depth, total_tokens=depth + 1)

    @classmethod
    def auto(cls, max_depth: int = 7, lookup: bool = True) -> "TreePolicy":
        return cls(top_k=1, depth=max_depth, total_tokens=max_depth + 1, adaptive=True, lookup=lookup)

    @classmethod
    def parse(cls, text: str) -> "TreePolicy":
        """"TOP_K,DEPTH,TOTAL" (e.g. "4,5,16"), "chain:DEPTH", or "auto[:MAX_DEPTH][:nolookup]"."""
        if not isinstance(text, str):
            fail(f"tree policy must be a string, got {text!r}")
        parts = text.split(":")
        lookup = parts[-1] != "nolookup"
        try:  # only the syntax here: out-of-range numbers get the constructor's own message
            if parts[0] == "auto" and len(parts) <= 3 and (lookup or len(parts) > 1):
                depths = [int(x) for x in (parts[1:] if lookup else parts[1:-1])]
                if len(depths) <= 1:
                    return cls.auto(depths[0] if depths else 7, lookup=lookup)
            elif parts[0] == "chain" and len(parts) == 2:
                return cls.chain(int(parts[1]))
            elif len(parts) == 1 and text.count(",") == 2:
                k, d, t = (int(x) for x in text.split(","))
                return cls(k, d, t)
        except ValueError as e:
            if str(e).startswith("[speculative]"):
                raise
        fail(f"tree policy {text!r} must be 'TOP_K,DEPTH,TOTAL', 'chain:DEPTH' or 'auto[:MAX_DEPTH][:nolookup]'")
