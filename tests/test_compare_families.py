"""bench/compare_families.py (E9.5): every family paired with the same plain runs, one summary per
workload and family, greedy outputs checked against plain decoding's."""

import pytest

from tests.fixtures.bench_script import load_bench_script


def load_script():
    return load_bench_script("compare_families")


@pytest.mark.slow
def test_families_share_the_plain_runs_and_match_plain_output():
    import eyas

    cf = load_script()
    prompts = [{"prompt": "Name three colors.", "chat": True, "workload": "chat", "max_tokens": 12},
               {"prompt": "def add(a, b):", "chat": False, "workload": "code", "max_tokens": 12}]
    plain = eyas.load(drafter="none", drafter_family="none", threads=1)
    models = {f: eyas.load(drafter_family=f, threads=1) for f in ("eagle3", "hydra")}
    out = cf.compare(models, plain, prompts, repeats=2, max_tokens=12, log=lambda s: None)
    assert set(out["summary"]) == {"eagle3", "hydra"}
    for fam, rows in out["rows"].items():
        assert [r["workload"] for r in rows] == ["chat", "code"] and all(r["identical"] for r in rows)
        assert set(out["summary"][fam]) == {"chat", "code", "all"}
    # The same plain runs pair with every family.
    assert [r["plain_s"] for r in out["rows"]["eagle3"]] == [r["plain_s"] for r in out["rows"]["hydra"]]
    table = cf.markdown(out["summary"])
    assert table.count("\n") == 1 + 3 * 2 and "| code | hydra |" in table


def test_unknown_family_is_refused():
    cf = load_script()
    with pytest.raises(SystemExit, match="unknown family 'medusa'"):
        cf.parse_family("medusa")
    assert cf.parse_family("hydra=/some/dir") == ("hydra", "/some/dir")
