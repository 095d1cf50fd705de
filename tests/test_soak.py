"""Bounded versions of bench/soak.py: many generations and requests with memory and descriptors
flat, and one model's forks used from several threads at once (the C++ thread pool is shared)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

import eyas
from tests.fixtures import tiny_models
from tests.parity.cases_speculative import random_checkpoint, write_checkpoint

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = ["Hello", "The quick brown fox", "1 2 3 4", "Once upon a time", "zzz", "numbers 12345"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("soak")
    target = tiny_models.random_llama_gguf(root / "tiny.gguf")
    cfg, t = random_checkpoint(1, eyas.load(str(target), drafter="none").spec)
    return str(target), str(write_checkpoint(root / "drafter", cfg, t))


@pytest.mark.parametrize("n_threads", [2, 4, 8])
@pytest.mark.parametrize("speculative", [False, True], ids=["plain", "speculative"])
def test_forks_on_concurrent_threads_give_their_output_alone(files, n_threads, speculative, restore_isa_and_threads):
    """Each fork has its own KV cache, but all share one thread pool; before it let callers take
    turns, two forwards at once mixed their jobs (wrong tokens) or deadlocked."""
    eyas._core.set_num_threads(2)
    model = eyas.load(files[0], drafter=files[1] if speculative else "none")
    want = {p: model.generate(p, max_tokens=16).tokens for p in PROMPTS}
    got, errors = {}, []

    def work(k, m):
        try:
            for p in PROMPTS[k % 3 :: 3]:
                got[(k, p)] = m.generate(p, max_tokens=16).tokens
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k, model.fork())) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors and len(got) == sum(len(PROMPTS[k % 3 :: 3]) for k in range(n_threads))
    assert all(tokens == want[p] for (_, p), tokens in got.items())


def test_short_soak_keeps_memory_and_descriptors_flat():
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--tiny", "--generations", "40",
                          "--requests", "40", "--phases", "generations,server"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "soak: ok" in run.stdout, run.stdout + run.stderr[-3000:]
