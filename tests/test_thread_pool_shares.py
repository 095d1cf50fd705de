"""ThreadPool's job protocol in C++ (tests/pool/driver.cpp, built here with the system compiler): each share
of each job runs exactly once and run() waits for all of them, with fewer threads than CPUs and with more
(where workers take over shares whose owner has no CPU), under uneven shares."""

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["csrc/core/thread_pool.cpp", "tests/pool/driver.cpp"]


@pytest.fixture(scope="module")
def driver():
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.fail("a C++ compiler is needed (the build that made eyas._core used one)")
    digest = hashlib.sha256()
    for p in SOURCES + ["csrc/core/thread_pool.h"]:
        digest.update((ROOT / p).read_bytes())
    out = ROOT / "build" / "pool_driver" / digest.hexdigest()[:16] / "driver"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([cxx, "-O2", "-std=c++17", "-pthread", "-Icsrc", *SOURCES, "-o", str(out)], cwd=ROOT,
                       check=True, capture_output=True, timeout=300)
    return out


def test_every_share_runs_exactly_once_at_any_thread_count(driver):
    r = subprocess.run([str(driver), "2000"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
