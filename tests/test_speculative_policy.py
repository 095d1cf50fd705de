"""TreePolicy validation and parsing; metrics bookkeeping."""

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
