"""A runtime proposer reads at most PROMPT_WINDOW pairs of a long prompt: the skipped pairs still count
in its length, truncating into them restarts the runtime after them, its drafts on the window equal
those of a drafter that was only ever given the window, and output stays identical to plain."""

import numpy as np
import pytest

from eyas.speculative import Eagle3Proposer, TreePolicy
from tests.parity.cases_speculative import build, random_checkpoint
from tests.test_speculative_greedy import AUX, check_equal, make_target


@pytest.fixture
def drafter():
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    return spec, core, build(spec, core, cfg, t)


def pairs(rng, n, width):
    return rng.standard_normal((n, width)).astype(np.float32), rng.integers(0, 64, n).astype(np.int32)


def test_length_counts_skipped_pairs_and_truncate_restarts_inside_them(drafter, monkeypatch):
    _, _, d = drafter
    monkeypatch.setattr(Eagle3Proposer, "PROMPT_WINDOW", 8)
    p = Eagle3Proposer(d)
    p.reset(128)
    rng = np.random.default_rng(0)
    f, t = pairs(rng, 20, 3 * 64)
    p.ingest(f, t)
    assert p.length == 20 and p._runtime.length == 8  # the first 12 were skipped
    p.ingest(*pairs(rng, 3, 3 * 64))  # later ingests are read whole
    assert p.length == 23 and p._runtime.length == 11
    p.truncate(15)
    assert p.length == 15 and p._runtime.length == 3
    p.truncate(5)  # inside the skipped part: nothing of the runtime is kept
    assert p.length == 5 and p._runtime.length == 0
    p.ingest(f[5:9], t[5:9])
    assert p.length == 9 and p._runtime.length == 4
    with pytest.raises(ValueError, match=r"truncate\(10\) outside \[0, 9\]"):
        p.truncate(10)


def test_drafts_equal_a_drafter_given_only_the_window(drafter, monkeypatch):
    _, _, d = drafter
    rng = np.random.default_rng(1)
    f, t = pairs(rng, 30, 3 * 64)
    whole = Eagle3Proposer(d)
    whole.reset(128)
    whole.ingest(f[-8:], t[-8:])
    want = whole.propose(TreePolicy(3, 3, 8))
    monkeypatch.setattr(Eagle3Proposer, "PROMPT_WINDOW", 8)
    windowed = Eagle3Proposer(d)
    windowed.reset(128)
    windowed.ingest(f, t)
    got = windowed.propose(TreePolicy(3, 3, 8))
    assert np.array_equal(got.tokens, want.tokens) and np.array_equal(got.parents, want.parents)


def test_long_prompts_stay_identical_to_plain(drafter, monkeypatch):
    spec, core, d = drafter
    monkeypatch.setattr(Eagle3Proposer, "PROMPT_WINDOW", 6)
    rng = np.random.default_rng(2)
    prompts = [rng.integers(0, 64, n).tolist() for n in (5, 6, 7, 40)]
    check_equal(spec, core, d, prompts, [TreePolicy(3, 3, 8), TreePolicy.auto(3)], 30)
