"""Tree shape of a speculative round (EAGLE-2 dynamic tree, reference eagle3.md §4.1)."""

from __future__ import annotations

import dataclasses


def fail(msg: str) -> None:
    raise ValueError(f"[spec] {msg}")


@dataclasses.dataclass(frozen=True)
class TreePolicy:
    """top_k: branching and frontier width; depth: max drafted tokens on a path; total_tokens: tree
    size incl. the root (EAGLE's `total_token`). top_k = 1 gives a chain of `depth` tokens.

    The default is a chain of 3: on the 2-core CPU a target forward over N tree nodes still costs
    about 1.5-2.5x a decode step for N = 4-16, so extra width buys less than it costs (docs/speculative.md)."""

    top_k: int = 1
    depth: int = 3
    total_tokens: int = 4

    def __post_init__(self):
        for name, lo, hi in (("top_k", 1, 256), ("depth", 1, 64), ("total_tokens", 2, 1024)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                fail(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")

    @classmethod
    def chain(cls, depth: int) -> "TreePolicy":
        return cls(top_k=1, depth=depth, total_tokens=depth + 1)

    @classmethod
    def parse(cls, text: str) -> "TreePolicy":
        """"TOP_K,DEPTH,TOTAL" (e.g. "4,5,16"), or "chain:DEPTH"."""
        try:
            if text.startswith("chain:"):
                return cls.chain(int(text[6:]))
            k, d, t = (int(x) for x in text.split(","))
        except ValueError:
            fail(f"tree policy {text!r} must be 'TOP_K,DEPTH,TOTAL' or 'chain:DEPTH'")
        return cls(k, d, t)
