"""Self-distillation sequences on disk and the draft-vocabulary choice.

A dataset is one .npz: ``tokens`` (all sequences concatenated, int32), ``offsets`` [N+1],
``prompt_lens`` [N] (tokens before the assistant reply; the rest is the loss region),
``temps`` [N] (sampling temperature used) and ``kinds`` [N] (0 = chat, 1 = code).
"""

from __future__ import annotations

import numpy as np


class Sequences:
    def __init__(self, tokens, offsets, prompt_lens, temps=None, kinds=None):
        self.tokens = np.asarray(tokens, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.prompt_lens = np.asarray(prompt_lens, dtype=np.int32)
        n = len(self.prompt_lens)
        self.temps = np.zeros(n, np.float32) if temps is None else np.asarray(temps, np.float32)
        self.kinds = np.zeros(n, np.int8) if kinds is None else np.asarray(kinds, np.int8)
        if len(self.offsets) != n + 1 or self.offsets[-1] != len(self.tokens):
            raise ValueError("[train] dataset offsets do not match tokens / prompt_lens")

    @classmethod
    def from_lists(cls, prompts, responses, temps=None, kinds=None):
        seqs = [list(p) + list(r) for p, r in zip(prompts, responses)]
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in seqs])])
        tokens = np.concatenate([np.asarray(s, np.int32) for s in seqs]) if seqs else np.zeros(0, np.int32)
        return cls(tokens, offsets, [len(p) for p in prompts], temps, kinds)

    def __len__(self):
        return len(self.prompt_lens)

    def seq(self, i):
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]

    def lengths(self):
        return np.diff(self.offsets)

    def save(self, path):
        np.savez(path, tokens=self.tokens, offsets=self.offsets, prompt_lens=self.prompt_lens, temps=self.temps, kinds=self.kinds)

    @classmethod
    def load(cls, path):
        z = np.load(path)
        return cls(z["tokens"], z["offsets"], z["prompt_lens"], z["temps"], z["kinds"])

    @classmethod
    def concat(cls, parts):
        parts = list(parts)
        toks = np.concatenate([p.tokens for p in parts])
        lens = np.concatenate([p.lengths() for p in parts])
        return cls(toks, np.concatenate([[0], np.cumsum(lens)]), np.concatenate([p.prompt_lens for p in parts]),
                   np.concatenate([p.temps for p in parts]), np.concatenate([p.kinds for p in parts]))

    def assistant_counts(self, vocab_size):
        """Token frequencies over assistant (loss-region) tokens only (reference §1.3)."""
        counts = np.zeros(vocab_size, np.int64)
        for i in range(len(self)):
            s = self.seq(i)[self.prompt_lens[i]:]
            np.add.at(counts, s, 1)
        return counts


def choose_draft_vocab(counts, draft_vocab_size):
    """counts: [V] assistant-token frequencies -> (used ids ascending [Vd], coverage fraction).

    The Vd most frequent ids, padded with the lowest unseen ids when fewer were seen (SpecForge).
    """
    V = len(counts)
    if not 0 < draft_vocab_size <= V:
        raise ValueError(f"[train] draft_vocab_size must be in 1..{V}, got {draft_vocab_size}")
    order = np.argsort(-counts, kind="stable")[:draft_vocab_size]
    used = np.sort(order)
    total = counts.sum()
    coverage = float(counts[used].sum() / total) if total else 0.0
    return used.astype(np.int64), coverage


def coverage_table(counts, sizes=(2048, 4096, 6144, 8192, 12288, 16384)):
    """Fraction of assistant tokens covered by the top-n vocab for each n (for choosing Vd)."""
    s = np.sort(counts)[::-1]
    total = max(int(s.sum()), 1)
    return {n: float(s[:n].sum() / total) for n in sizes if n <= len(s)}
