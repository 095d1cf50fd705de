"""The one check every hostile-input case makes: a clear ValueError, and no big allocation on the way."""

from __future__ import annotations

import re
import tracemalloc

import pytest

# A lying size must never turn into an allocation near its claim; the tiny files here need far less.
MAX_PEAK_BYTES = 64 * 2**20


def rejects(call, match: str, *, op: str | None = None):
    """call() raises ValueError whose message matches `match` (and starts with `[op]` when given),
    with Python/numpy allocations peaking under MAX_PEAK_BYTES. Returns the exception."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert re.search(match, message), f"message {message!r} does not match {match!r}"
    if op is not None:
        assert message.startswith(f"[{op}]"), f"message {message!r} does not start with [{op}]"
    assert peak < MAX_PEAK_BYTES, f"peak allocation {peak} bytes while rejecting the input"
    return info.value
