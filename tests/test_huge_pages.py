"""Weight repacks live in memory marked for transparent huge pages (csrc/core/huge_pages.h): a
decode step streams every repack once, and with 4 KiB pages it pays a TLB miss per page and
prefetchers that stop at each page edge. Only whole 2 MiB pages are marked, so a repack's tail
does not make unused memory resident; EYAS_HUGE_PAGES=0 turns the marking off."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from eyas import _core

HUGE = 2 << 20

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="madvise and /proc/self/smaps are Linux's")


def _vmas_of(addr: int, nbytes: int) -> list[dict]:
    """The /proc/self/smaps entries overlapping [addr, addr + nbytes): start, end, VmFlags."""
    found, cur = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                cur = {"start": lo, "end": hi, "flags": []} if lo < addr + nbytes and hi > addr else None
                if cur:
                    found.append(cur)
            elif cur is not None and head == "VmFlags:":
                cur["flags"] = line.split()[1:]
    return found


def _advised_bytes(a: np.ndarray) -> int:
    addr = a.ctypes.data
    return sum(min(v["end"], addr + a.nbytes) - max(v["start"], addr) for v in _vmas_of(addr, a.nbytes) if "hg" in v["flags"])


def test_large_buffers_are_aligned_and_advised_in_whole_huge_pages():
    n = 5 * HUGE + 12345
    a = _core._alloc_streamed(n)
    assert a.nbytes == n and a.ctypes.data % HUGE == 0
    a[:] = 7  # writable, every page
    assert int(a[::4096].sum()) == 7 * len(a[::4096])
    # Counted in a fresh process: here the tail can share a mapping an earlier test's buffer advised.
    assert _advised_in_fresh_process(n) == 5 * HUGE, "the whole 2 MiB pages, and not the tail, are marked"


def _advised_in_fresh_process(nbytes: int, **env) -> int:
    """_advised_bytes of one buffer allocated first thing in a new process: in this one, memory freed
    by earlier tests may still lie in an advised mapping that the allocator hands out again."""
    code = textwrap.dedent(f"""
        from eyas import _core
        from tests.test_huge_pages import _advised_bytes
        a = _core._alloc_streamed({nbytes})
        print(_advised_bytes(a))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip())


def test_small_buffers_are_not_advised():
    assert _core._alloc_streamed(HUGE + 100).ctypes.data % 64 == 0
    assert _advised_in_fresh_process(HUGE + 100) == 0


def test_marking_can_be_turned_off():
    assert _advised_in_fresh_process(5 * HUGE, EYAS_HUGE_PAGES="0") == 0
