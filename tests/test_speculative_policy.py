"""TreePolicy validation and parsing; metrics bookkeeping."""

import math

import pytest

from eyas.speculative import SpeculativeMetrics, TreePolicy


def test_policy_parse_and_chain():
    assert TreePolicy.parse("4,5,16") == TreePolicy(4, 5, 16)
    assert TreePolicy.parse("chain:3") == TreePolicy(1, 3, 4) == TreePolicy.chain(3)
    for bad in ("4,5", "a,b,c", "chain:x", "0,5,16", "4,0,16", "4,5,1", "300,5,16"):
        with pytest.raises(ValueError, match=r"\[speculative\]"):
            TreePolicy.parse(bad)
    with pytest.raises(ValueError, match=r"\[speculative\].*top_k"):
        TreePolicy(top_k=True)


def test_policy_floor():
    assert TreePolicy.auto().min_prob == TreePolicy.chain(3).min_prob == TreePolicy(4, 5, 16).min_prob == 0.0
    assert TreePolicy.parse("auto") == TreePolicy.auto() == TreePolicy.parse("auto@0")
    assert TreePolicy.parse("auto@0.2") == TreePolicy.auto(min_prob=0.2)
    assert TreePolicy.parse("auto:5:nolookup@0.3") == TreePolicy.auto(5, lookup=False, min_prob=0.3)
    assert TreePolicy.parse("chain:3@0.1") == TreePolicy.chain(3, min_prob=0.1)
    assert TreePolicy.parse("4,5,16@0.05") == TreePolicy(4, 5, 16, min_prob=0.05)
    assert TreePolicy.chain(2, min_prob=0.25).min_log_prob == pytest.approx(math.log(0.25))
    assert TreePolicy.chain(2).min_log_prob == -math.inf
    for bad in ("auto@", "auto@x", "chain:3@0.1@0.2"):
        with pytest.raises(ValueError, match=r"\[speculative\].*MIN_PROB"):
            TreePolicy.parse(bad)
    for bad in ("auto@1", "auto@-0.1", "auto@nan", "chain:2@inf"):
        with pytest.raises(ValueError, match=r"\[speculative\].*min_prob"):
            TreePolicy.parse(bad)
    with pytest.raises(ValueError, match=r"\[speculative\].*min_prob"):
        TreePolicy(min_prob=True)


def test_metrics():
    m = SpeculativeMetrics()
    assert m.mean_accepted_length == 0.0
    m.observe(tree_size=16, accepted=3)
    m.observe(tree_size=16, accepted=0)
    m.observe(tree_size=8, accepted=1)
    d = m.as_dict()
    assert d["num_drafts"] == 3 and d["num_draft_tokens"] == 15 + 15 + 7 and d["num_accepted_tokens"] == 4
    assert d["accepted_per_pos"] == [2, 1, 1]
    assert d["mean_accepted_length"] == pytest.approx(1 + 4 / 3)
    assert d["mean_tree_size"] == pytest.approx(1 + 37 / 3)
