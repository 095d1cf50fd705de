"""Drafts copied from the sequence itself (prompt lookup): when the last few tokens occurred before,
what followed them then is a free guess at what follows now.

Text repeats itself: a summary quotes its document, code reuses its names, and a small model's greedy
reply often loops. Such a draft costs no drafter forward, only the verify of its nodes, so the
adaptive chain (`eyas.speculative.generator`) drafts it instead of the drafter's chain whenever
there is one and its measured acceptance pays (docs/speculative.md §3).
"""

from __future__ import annotations

import numpy as np

from eyas.speculative.rounds import DraftTree


class PromptLookup:
    """An index of every n-gram (MIN_N <= n <= MAX_N) of the committed sequence to the position
    after its latest occurrence. `continuation(k)` matches the longest suffix that occurred before and
    returns up to k tokens that followed it there, with the match's length (a longer match is right
    more often: on the default model's replies a first copied token lands ~0.5 of the time after a
    2-token match and ~0.9 after a 4-token one)."""

    MIN_N = 2  # a single shared token predicts the next one too rarely to be worth a verify node
    MAX_N = 4  # longer matches add little over 4 tokens of agreement

    def __init__(self):
        self.tokens: list[int] = []
        self._next: dict[tuple, int] = {}  # n-gram -> index of the token that followed its latest occurrence

    def extend(self, ids) -> None:
        """Append committed token ids (the prompt, then each round's tokens)."""
        seq, follow = self.tokens, self._next
        for t in ids:
            seq.append(int(t))
            at = len(seq) - 1  # the new token follows every n-gram that ends just before it
            for n in range(self.MIN_N, self.MAX_N + 1):
                if at - n < 0:
                    break
                follow[tuple(seq[at - n : at])] = at

    def continuation(self, k: int) -> tuple[list[int], int]:
        """(up to k tokens that followed the latest earlier occurrence of the longest matching suffix,
        that suffix's length n, MAX_N down to MIN_N); ([], 0) when no suffix occurred before."""
        seq = self.tokens
        for n in range(min(self.MAX_N, len(seq)), self.MIN_N - 1, -1):
            at = self._next.get(tuple(seq[len(seq) - n :]))
            if at is not None:
                return seq[at : at + k], n
        return [], 0


def chain_tree(root: int, drafts: list[int]) -> DraftTree:
    """A chain draft tree: root, then each drafted token the child of the one before."""
    n = len(drafts) + 1
    return DraftTree(
        tokens=np.array([root, *drafts], np.int32),
        parents=np.arange(-1, n - 1, dtype=np.int32),
        depths=np.arange(n, dtype=np.int32),
        mask=np.tril(np.ones((n, n), np.uint8)),
    )
