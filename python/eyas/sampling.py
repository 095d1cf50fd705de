"""Token selection: greedy, or temperature / top-k / top-p sampling from a seeded generator."""

from __future__ import annotations

import dataclasses

import numpy as np


def fail(msg: str) -> None:
    raise ValueError(f"[sampling] {msg}")


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0  # 0 = greedy (argmax, lowest id on ties)
    top_p: float = 1.0
    top_k: int = 0  # 0 = no limit
    seed: int | None = None

    def __post_init__(self):
        t, p, k = self.temperature, self.top_p, self.top_k
        if not isinstance(t, (int, float)) or not np.isfinite(t) or t < 0:
            fail(f"temperature must be a finite number >= 0, got {t!r}")
        if not isinstance(p, (int, float)) or not 0 < p <= 1:
            fail(f"top_p must be in (0, 1], got {p!r}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            fail(f"top_k must be an integer >= 0, got {k!r}")
        if self.seed is not None and (not isinstance(self.seed, int) or self.seed < 0):
            fail(f"seed must be a non-negative integer or None, got {self.seed!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


class Sampler:
    """Picks the next token from a logits row. Same params, seed and logits -> same tokens."""

    def __init__(self, params: SamplingParams | None = None):
        self.params = params or SamplingParams()
        self.rng = np.random.default_rng(self.params.seed)

    def distribution(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(token ids, probabilities) the sampler draws from, ids ordered by falling logit (ties: lower id first).

        Speculative sampling uses the same filtered distribution so it stays lossless. Only the
        tokens that can be kept are sorted (a full-vocabulary sort cost ~6 ms per token).
        """
        x = self._checked(logits)
        p = self.params
        t = max(p.temperature, 1e-30)
        if p.top_k or p.top_p >= 1.0:  # normalised over the top_k (or all) tokens
            order = _top(x, p.top_k or x.size)
            z = x[order] / t
            probs = np.exp(z - z[0])
            probs /= probs.sum()
        else:  # normalised over the whole vocabulary; only the candidates holding the nucleus are sorted
            zmax = x.max() / t
            total = np.exp(x / t - zmax).sum()
            m = 64
            while True:
                order = _top(x, m)
                probs = np.exp(x[order] / t - zmax) / total
                if probs.sum() >= p.top_p or len(order) == x.size:
                    break
                m *= 8
        if p.top_p < 1.0:
            keep = int(np.searchsorted(np.cumsum(probs), p.top_p)) + 1  # smallest prefix with mass >= top_p
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        return order, probs

    @staticmethod
    def _checked(logits) -> np.ndarray:
        x = np.asarray(logits, dtype=np.float64).reshape(-1)
        if x.size == 0 or not np.all(np.isfinite(x) | (x == -np.inf)) or x.max() == -np.inf:
            fail("logits must be a non-empty row of finite values (or -inf, not all)")
        return x

    def sample(self, logits: np.ndarray) -> int:
        if self.params.greedy:
            row = np.asarray(logits).reshape(-1)
            if row.size == 0:
                fail("logits row is empty")
            return int(np.argmax(row))
        p = self.params
        if not p.top_k and p.top_p >= 1.0:  # the whole vocabulary: no order needed, draw in id order
            x = self._checked(logits) / max(p.temperature, 1e-30)
            cdf = np.cumsum(np.exp(x - x.max()))
            u = self.rng.random()
            return int(min(np.searchsorted(cdf, u * cdf[-1], side="right"), x.size - 1))
        ids, probs = self.distribution(logits)
        u = self.rng.random()
        i = int(np.searchsorted(np.cumsum(probs), u, side="right"))
        return int(ids[min(i, len(ids) - 1)])


def _top(x: np.ndarray, m: int) -> np.ndarray:
    """Ids of the m largest values of x by falling value, ties by rising id (a full stable sort's prefix)."""
    if m >= x.size:
        return np.argsort(-x, kind="stable")
    v = np.partition(x, x.size - m)[x.size - m]  # the m-th largest
    cand = np.flatnonzero(x >= v)  # every tie of v included, so the sort below matches the full sort
    return cand[np.argsort(-x[cand], kind="stable")][:m]
