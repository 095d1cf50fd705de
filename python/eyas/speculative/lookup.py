"""Drafts copied from the sequence itself (prompt lookup): when the last few tokens occurred before,
what followed them then is a free guess at what follows now.

Text repeats itself: a summary quotes its document, code reuses its names, and a small model's greedy
reply often loops. Such a draft costs no drafter forward, only the verify of its nodes, so the
adaptive chain (`eyas.speculative.generator`) drafts it instead of the drafter's chain whenever
there is one and its measured acceptance pays (docs/speculative.md §3).
"""

from __future__ import annotations

import functools

import numpy as np

from eyas.speculative.rounds import DraftTree


class PromptLookup:
    """An index of every n-gram of the committed sequence, n in SIZES, to the position after its
    latest occurrence. `continuation(k)` matches the longest suffix (of those sizes) that occurred
    before and returns up to k tokens that followed it there, with the match's size: a longer match
    is right more often and for longer. On the default model's greedy replies to the E7 prompts a
    first copied token lands ~0.55 of the time after a 2-token match, ~0.75 after 4 to 7 tokens and
    ~0.95 after 8 or more (a reply repeating itself), where the eighth copied token still lands ~0.75
    of the time against ~0.25 after 4 to 7."""

    SIZES = (2, 3, 4, 8)  # 2: one shared token predicts too rarely; 5-7 behave as 4

    def __init__(self):
        self.tokens: list[int] = []
        self._next: dict[tuple, int] = {}  # n-gram -> index of the token that followed its latest occurrence

    def extend(self, ids) -> None:
        """Append committed token ids (the prompt, then each round's tokens)."""
        seq, follow = self.tokens, self._next
        for t in ids:
            seq.append(int(t))
            at = len(seq) - 1  # the new token follows every n-gram that ends just before it
            for n in self.SIZES:
                if at - n < 0:
                    break
                follow[tuple(seq[at - n : at])] = at

    def continuation(self, k: int) -> tuple[list[int], int]:
        """(up to k tokens that followed the latest earlier occurrence of the longest matching suffix,
        that suffix's length n, one of SIZES); ([], 0) when no suffix occurred before."""
        seq = self.tokens
        for n in reversed(self.SIZES):
            if n > len(seq):
                continue
            at = self._next.get(tuple(seq[len(seq) - n :]))
            if at is not None:
                return seq[at : at + k], n
        return [], 0


def chain_tree(root: int, drafts: list[int]) -> DraftTree:
    """A chain draft tree: root, then each drafted token the child of the one before."""
    parents, depths, mask = _chain_shape(len(drafts) + 1)
    return DraftTree(tokens=np.array([root, *drafts], np.int32), parents=parents, depths=depths, mask=mask)


@functools.lru_cache(maxsize=None)
def _chain_shape(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A chain of n nodes' parents, depths and mask, built once per n and read-only (every round shares them)."""
    arrays = (np.arange(-1, n - 1, dtype=np.int32), np.arange(n, dtype=np.int32), np.tril(np.ones((n, n), np.uint8)))
    for a in arrays:
        a.flags.writeable = False
    return arrays
