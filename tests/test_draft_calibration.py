"""bench/draft_calibration.py: every drafted round's judged tokens are counted once, consistently with
the accepted counts the generator reports."""

import numpy as np

from tests.fixtures.bench_script import load_bench_script


def test_calibration_counts_match_the_rounds():
    import eyas

    dc = load_bench_script("draft_calibration")
    model = eyas.load(threads=1)
    items = [{"prompt": "Name three colors.", "chat": True, "max_tokens": 24},
             {"prompt": "def add(a, b):", "chat": False, "max_tokens": None}]
    c = dc.calibrate(model, items, chain=3, max_tokens=24)
    assert c["rounds"] > 0 and c["first"].sum() == c["rounds"]  # one first token per round
    assert c["accepted"].sum() == c["accepted_tokens"]
    assert ((c["p"] > 0) & (c["p"] <= 1)).all()
    # A round's tokens are judged up to its first rejection: no accepted token after a rejected one.
    starts = np.flatnonzero(c["first"])
    for a, b in zip(starts, list(starts[1:]) + [len(c["p"])]):
        ok = c["accepted"][a:b]
        assert ok[:-1].all() and len(ok) <= 3
    rows = dc.table(c).splitlines()
    assert len(rows) == 12 and sum(int(r.split(" | ")[1]) for r in rows[2:]) == len(c["p"])
    assert model.proposer.propose.__func__ is type(model.proposer).propose  # the recording hooks are removed
