"""Coverage-guided fuzzing (atheris) of every reader of untrusted input, for a bounded time per
target, plus a replay of every input a fuzzer ever crashed (tests/fuzz/regressions/<target>/).

EYAS_FUZZ_SECONDS sets the time per target (default 6) and EYAS_FUZZ_SEED the seed (default 1, so a
CI run walks the same inputs each time; 0 picks a random one). Search harder by hand:
    python -m tests.fuzz.run gguf --seconds 600 --work /tmp/fuzz-gguf
and add what it finds to tests/fuzz/regressions/<target>/ with its fix.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS, expected_errors

FUZZ = Path(__file__).resolve().parent / "fuzz"
SECONDS = int(os.environ.get("EYAS_FUZZ_SECONDS", "6"))
SEED = int(os.environ.get("EYAS_FUZZ_SEED", "1"))


def _atheris():
    """CI installs atheris (.ci/setup-test-deps): there a missing one fails; locally it skips."""
    if os.environ.get("CI"):
        return importlib.import_module("atheris")
    return pytest.importorskip("atheris")


def _inputs(kind: str):
    return [pytest.param(t, p, id=f"{t}/{p.name}") for t in TARGETS for p in sorted((FUZZ / kind / t).glob("*"))
            if (FUZZ / kind / t).is_dir()]


@pytest.mark.parametrize("target, path", _inputs("regressions") + _inputs("corpus"))
def test_known_input_gives_a_clear_error_or_none(target, path):
    if target == "sampling_and_tree":
        _atheris()  # its target reads the input through atheris' FuzzedDataProvider
    try:
        TARGETS[target](path.read_bytes())
    except expected_errors():
        pass


def test_every_target_has_a_seed_corpus():
    assert all(any((FUZZ / "corpus" / t).glob("*")) for t in TARGETS)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target_finds_nothing(target, tmp_path):
    _atheris()
    # TMPDIR: the target's scratch file lands in tmp_path (libFuzzer's exit skips Python's atexit cleanup).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FUZZ.parent.parent), *sys.path]), "TMPDIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "tests.fuzz.run", target, "--seconds", str(SECONDS), "--seed", str(SEED), "--work",
                          str(tmp_path)], capture_output=True, text=True, env=env, timeout=SECONDS + 120)
    findings = [p for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-", "leak-"))]
    detail = "\n".join(f"{p.name}: {p.read_bytes()[:400]!r}" for p in findings)
    assert run.returncode == 0 and not findings, f"{detail}\n{run.stderr[-3000:]}"
    assert "stat::number_of_executed_units" in run.stderr  # it really ran
