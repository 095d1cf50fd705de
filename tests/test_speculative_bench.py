"""`eyas bench` machinery and speculative generation through the shared Generation loop (EOS, stop
strings, max tokens, streaming), on a tiny target with a random drafter."""

import json

import numpy as np
import pytest

from eyas import _core
from eyas.commands.bench import _table, bench, read_prompts
from eyas.generation import Generation, stream
from eyas.sampling import SamplingParams
from eyas.speculative import Eagle3Proposer, TreePolicy
from tests.parity.cases_speculative import build, random_checkpoint
from tests.test_speculative_greedy import make_target


class FakeTokenizer:
    def __init__(self, eos=()):
        self.eos_ids = list(eos)

    def decode(self, ids):
        return "".join(f"<{i}>" for i in ids)


class FakeModel:
    def __init__(self, eos=()):
        spec, core = make_target()
        cfg, t = random_checkpoint(1, spec, draft_vocab=48)
        self.proposer = Eagle3Proposer(build(spec, core, cfg, t))
        self.transformer = _core.Transformer(spec, core, max_context=128, aux_layers=self.proposer.aux_layers)
        self.tokenizer = FakeTokenizer(eos)

    def encode_prompt(self, prompt, chat=False):
        return [ord(c) % 64 for c in prompt]


def test_bench_pairs_runs_and_reports(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "hello", "chat": true}\n\n{"prompt": "abc"}\n')
    prompts = read_prompts(f)
    assert prompts == [{"prompt": "hello", "chat": True, "workload": "p", "max_tokens": None},
                       {"prompt": "abc", "chat": False, "workload": "p", "max_tokens": None}]
    r = bench(FakeModel(), prompts, policy=TreePolicy(3, 3, 8), max_tokens=10, repeats=2)
    assert r["identical"] is True
    assert [row["prompt"] for row in r["rows"]] == [0, 1]
    assert all(row["plain_tokens"] == row["speculative_tokens"] == 2 * 9 for row in r["rows"])
    assert r["mean_accepted_length"] >= 1.0 and r["speed_ratio"] > 0
    assert r["tree"] == {"top_k": 3, "depth": 3, "total_tokens": 8, "adaptive": False, "lookup": False}
    json.dumps(r)
    assert "identical yes" in _table(r)


def test_bench_sampled_passes_the_sampling_params():
    prompts = [{"prompt": "hello", "chat": False}]
    r = bench(FakeModel(), prompts, policy=TreePolicy(2, 2, 4), max_tokens=8, temperature=0.7, top_p=0.9, top_k=5)
    assert (r["temperature"], r["top_p"], r["top_k"]) == (0.7, 0.9, 5)
    assert r["identical"] is True  # one seed: speculative sampling draws plain sampling's tokens
    with pytest.raises(ValueError, match=r"\[sampling\] top_p"):
        bench(FakeModel(), prompts, temperature=0.7, top_p=1.5)


def test_bench_workloads_worst_prompt_and_depth_rates(tmp_path):
    f = tmp_path / "mixed.jsonl"
    f.write_text('{"prompt": "hello", "workload": "docs", "max_tokens": 6}\n{"prompt": "xyz", "workload": "code"}\n'
                 '{"prompt": "abcdef"}\n')
    prompts = read_prompts(f)
    assert [p["workload"] for p in prompts] == ["docs", "code", "mixed"]
    r = bench(FakeModel(), prompts, policy=TreePolicy(3, 3, 8), max_tokens=10)
    assert [row["speculative_tokens"] for row in r["rows"]] == [5, 9, 9]  # the line's max_tokens wins
    assert list(r["workloads"]) == ["docs", "code", "mixed"]
    for name, v in r["workloads"].items():
        mine = [row for row in r["rows"] if row["workload"] == name]
        assert v["worst_speedup"] == min(row["speedup"] for row in mine) and v["identical"] is True
        assert all(0.0 <= a <= 1.0 for a in v["acceptance_per_pos"])
    # Per-depth rates are accepted / tried at each depth, pooled over the prompts.
    acc = [sum(row["accepted_per_pos"][d] if d < len(row["accepted_per_pos"]) else 0 for row in r["rows"])
           for d in range(3)]
    tried = [sum(row["tried_per_pos"][d] if d < len(row["tried_per_pos"]) else 0 for row in r["rows"])
             for d in range(3)]
    assert tried[0] == sum(row["num_drafts"] for row in r["rows"])  # every round drafts depth 1 here
    assert r["acceptance_per_pos"] == pytest.approx([a / t for a, t in zip(acc, tried) if t])
    table = _table(r)
    assert "docs" in table and "worst" in table and "acceptance at depth" in table


def test_bench_reports_each_repeat_ratio(tmp_path):
    prompts = [{"prompt": "hello", "chat": False, "workload": "a"}, {"prompt": "abc", "chat": False, "workload": "a"}]
    r = bench(FakeModel(), prompts, policy=TreePolicy(3, 3, 8), max_tokens=10, repeats=3)
    v = r["workloads"]["a"]
    assert len(v["speedup_per_repeat"]) == len(r["speed_ratio_per_repeat"]) == 3
    # Each repeat's ratio pools that repeat's pairs alone; the pooled ratio lies within their range.
    rows = r["rows"]
    for k in range(3):
        ps, pt, ss, st = (sum(row["per_repeat"][k][i] for row in rows) for i in range(4))
        assert v["speedup_per_repeat"][k] == pytest.approx((st / ss) / (pt / ps))
    assert min(v["speedup_per_repeat"]) <= v["speedup"] * (1 + 1e-9)
    assert max(v["speedup_per_repeat"]) >= v["speedup"] * (1 - 1e-9)
    assert sum(p[1] for row in rows for p in row["per_repeat"]) == sum(row["plain_tokens"] for row in rows)
    lo, hi = min(v["speedup_per_repeat"]), max(v["speedup_per_repeat"])
    table = _table(r)
    assert f"{lo:.2f}-{hi:.2f}x" in table and "(repeats " in table


def test_bench_short_prompts_run_extra_pairs_and_weigh_as_the_rest():
    from eyas.commands import bench as bench_mod

    prompts = [{"prompt": "hello", "chat": False, "workload": "a"}, {"prompt": "abcdef", "chat": False, "workload": "a"}]
    # No prompt of the tiny model decodes for an hour: every one runs the most pairs, MAX_EXTRA_PAIRS x repeats.
    r = bench(FakeModel(), prompts, policy=TreePolicy(2, 2, 4), max_tokens=6, repeats=2, min_seconds=3600.0)
    assert [len(row["per_repeat"]) for row in r["rows"]] == [bench_mod.MAX_EXTRA_PAIRS * 2] * 2
    assert r["min_seconds"] == 3600.0 and "(up to 8 under 3600 s)" in _table(r)
    assert len(r["speed_ratio_per_repeat"]) == 8
    # Already over the minimum after the asked repeats: no extra pair.
    r = bench(FakeModel(), prompts, policy=TreePolicy(2, 2, 4), max_tokens=6, repeats=2, min_seconds=1e-9)
    assert [len(row["per_repeat"]) for row in r["rows"]] == [2, 2]
    # Pooling scales each row to `repeats` pairs: a row that ran 4x the pairs weighs as one of 2 pairs.
    a = {k: 1.0 for k in bench_mod._SUMMED} | {"per_repeat": [0] * 2, "accepted_per_pos": [2], "tried_per_pos": [4]}
    b = {k: 4.0 for k in bench_mod._SUMMED} | {"per_repeat": [0] * 8, "accepted_per_pos": [8], "tried_per_pos": [8]}
    pooled = bench_mod._pooled([a, b], 2)
    assert pooled["plain_s"] == 2.0 and pooled["accepted_per_pos"] == [4.0] and pooled["tried_per_pos"] == [6.0]
    assert bench_mod._pooled([a, b])["plain_s"] == 5.0  # no repeats given: plain sums


def test_bench_cli_rejects_a_negative_min_seconds(tmp_path, capsys):
    from eyas.cli import main

    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "hi"}\n')
    assert main(["bench", "--prompts", str(f), "--min-seconds", "-1"]) != 0
    assert "[bench] --min-seconds must be >= 0" in capsys.readouterr().err


def test_metrics_count_depths_tried_after_an_accepted_parent():
    from eyas.speculative.metrics import SpeculativeMetrics

    m = SpeculativeMetrics()
    m.observe(4, 1)  # a chain of 3: depth 1 accepted, depth 2 tried and rejected, depth 3 never reached
    m.observe(4, 3)  # all 3 accepted
    m.observe(7, 0, depth=2)  # a tree of depth 2: depth 1 rejected
    m.observe(1, 0)  # a plain step drafts nothing
    assert m.accepted_per_pos == [2, 1, 1] and m.tried_per_pos == [3, 2, 1]
    assert m.acceptance_per_pos == pytest.approx([2 / 3, 1 / 2, 1.0])


def test_bench_plot_writes_a_picture(tmp_path):
    pytest.importorskip("matplotlib", reason="CI installs matplotlib (.ci/setup-test-deps)")
    from eyas.commands.bench_plot import check_plotting, plot

    r = bench(FakeModel(), [{"prompt": "hello", "chat": False, "workload": "w"}], policy=TreePolicy(2, 2, 4),
              max_tokens=6)
    out = tmp_path / "b.png"
    plot(r, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match=r"\[bench\].*must end in"):
        check_plotting(tmp_path / "b.txt")
    with pytest.raises(ValueError, match=r"\[bench\].*does not exist"):
        check_plotting(tmp_path / "nope" / "b.png")


def test_bench_bad_prompt_files(tmp_path):
    with pytest.raises(ValueError, match=r"\[bench\].*no such"):
        read_prompts(tmp_path / "missing.jsonl")
    (tmp_path / "a.jsonl").write_text("{oops\n")
    with pytest.raises(ValueError, match=r"\[bench\].*a.jsonl:1"):
        read_prompts(tmp_path / "a.jsonl")
    (tmp_path / "b.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match=r"\[bench\].*'prompt'"):
        read_prompts(tmp_path / "b.jsonl")
    (tmp_path / "c.jsonl").write_text('{"prompt": "x", "max_tokens": 0}\n')
    with pytest.raises(ValueError, match=r"\[bench\].*max_tokens"):
        read_prompts(tmp_path / "c.jsonl")
    m = FakeModel()
    m.proposer = None
    with pytest.raises(ValueError, match=r"\[bench\].*no drafter"):
        bench(m, [{"prompt": "x", "chat": False}])


def run(model, ids, speculative, **kw):
    proposer = model.proposer if speculative else None
    steps = stream(model.transformer, ids, SamplingParams(), proposer=proposer, policy=TreePolicy(4, 4, 12))
    g = Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), **kw)
    pieces = list(g)
    return g.result, pieces


def test_stop_conditions_match_plain():
    m = FakeModel()
    ids = [3, 1, 4, 1, 5]
    full, _ = run(m, ids, False, max_tokens=30)
    first_new = next(i for i in range(1, 30) if full.tokens[i] not in full.tokens[:i])
    cases = [
        ([full.tokens[first_new]], dict(max_tokens=30), "eos"),
        ([], dict(max_tokens=4), "length"),
        ([], dict(max_tokens=30, stop=[f"<{full.tokens[2]}><{full.tokens[3]}>"]), "stop"),
    ]
    for eos, kw, reason in cases:
        m.tokenizer = FakeTokenizer(eos)
        want, want_pieces = run(m, ids, False, **kw)
        got, got_pieces = run(m, ids, True, **kw)
        assert want.finish_reason == reason
        assert (got.text, got.tokens, got.finish_reason) == (want.text, want.tokens, want.finish_reason), kw
        assert "".join(got_pieces) == got.text
        assert got.metrics["num_drafts"] >= 1 or len(got.tokens) <= 1
