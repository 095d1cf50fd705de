"""Sampling parameters (checked here); the draws themselves are C++'s (`_core.speculative.sample`),
the same code speculative acceptance uses, so plain and speculative decoding share one sampler."""

from __future__ import annotations

import dataclasses
import math


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
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
            fail(f"temperature must be a finite number >= 0, got {t!r}")
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 < p <= 1:
            fail(f"top_p must be in (0, 1], got {p!r}")
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < 2**31:
            fail(f"top_k must be an integer in [0, 2**31), got {k!r}")
        s = self.seed
        if s is not None and (not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 2**64):
            fail(f"seed must be an integer in [0, 2**64) or None, got {s!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def filters(self) -> dict:
        """The keyword arguments of `_core.speculative.sample` / `accept` that shape the distribution."""
        return dict(temperature=float(self.temperature), top_k=int(self.top_k), top_p=float(self.top_p))

    def make_rng(self):
        """The generator every draw of one generation takes from: seeded, or fresh entropy."""
        import secrets

        from eyas import _core

        return _core.speculative.Rng(self.seed if self.seed is not None else secrets.randbits(63))

    def sample(self, logits, rng) -> int:
        """One token from a logits row F32[V] (argmax when greedy), drawn by the C++ sampler."""
        from eyas import _core

        return _core.speculative.sample(logits, rng=rng, **self.filters())

    def sample_with_top(self, logits, rng) -> tuple[int, float]:
        """`sample`'s draw (the same rng use) and the largest probability of the filtered row it was drawn
        from (1 when greedy): the most a drafted token could be accepted with at this position."""
        from eyas import _core

        return _core.speculative.sample_with_top(logits, rng=rng, **self.filters())
