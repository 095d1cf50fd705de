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
    (docs/speculative.md §3, docs/performance.md)."""

    top_k: int = 1
    depth: int = 3
    total_tokens: int = 4
    adaptive: bool = False

    def __post_init__(self):
        for name, lo, hi in (("top_k", 1, 256), ("depth", 1, 64), ("total_tokens", 2, 1024)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                fail(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")
        if not isinstance(self.adaptive, bool):
            fail(f"adaptive must be a bool, got {self.adaptive!r}")
        if self.adaptive and (self.top_k != 1 or self.total_tokens != self.depth + 1):
            fail("an adaptive policy must be a chain (top_k 1, total_tokens = depth + 1)")

    @classmethod
    def chain(cls, depth: int) -> "TreePolicy":
        return cls(top_k=1, depth=depth, total_tokens=depth + 1)

    @classmethod
    def auto(cls, max_depth: int = 7) -> "TreePolicy":
        return cls(top_k=1, depth=max_depth, total_tokens=max_depth + 1, adaptive=True)

    @classmethod
    def parse(cls, text: str) -> "TreePolicy":
        """"TOP_K,DEPTH,TOTAL" (e.g. "4,5,16"), "chain:DEPTH", or "auto" / "auto:MAX_DEPTH"."""
        if text == "auto":
            return cls.auto()
        try:  # only the syntax here: out-of-range numbers get the constructor's own message
            if text.startswith(("auto:", "chain:")):
                kind, depth = text.split(":")
                depth = int(depth)
            else:
                k, d, t = (int(x) for x in text.split(","))
        except ValueError:
            fail(f"tree policy {text!r} must be 'TOP_K,DEPTH,TOTAL', 'chain:DEPTH', 'auto' or 'auto:MAX_DEPTH'")
        if text.startswith(("auto:", "chain:")):
            return cls.auto(depth) if kind == "auto" else cls.chain(depth)
        return cls(k, d, t)
