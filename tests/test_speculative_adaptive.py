"""Adaptive chain depth (eyas.speculative.adaptive): the chooser's arithmetic and exploration, and the
generator's plain-step rounds (depth 0) keeping greedy output identical to plain decoding."""

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams
from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
from eyas.speculative import generator as generator_module
from eyas.speculative.adaptive import AcceptanceBound, DepthChooser, fixed_cost
from tests.parity.cases_speculative import build, random_checkpoint
from tests.test_speculative_greedy import AUX, LAYERS, make_target, probe_logits, take


def run(chooser, rounds, accepted_of, cost_of):
    picks = []
    for _ in range(rounds):
        d = chooser.choose()
        picks.append(d)
        chooser.observe(d, accepted_of(d), cost_of(d))
    return picks


def test_first_rounds_measure_a_one_token_chain_then_a_plain_step():
    c = DepthChooser(3)
    for _ in range(DepthChooser.WARMUP_ROUNDS):  # the warm-up (the first also ingests the prompt): untimed
        assert c.choose() == 1
        c.observe(1, 1, 9.0)
    assert c.cost == [None] * 4 and c.expected_tokens(1) > 1.5  # its acceptance counts
    assert c.choose() == 1
    c.observe(1, 1, 1.0)
    assert c.choose() == 0
    c.observe(0, 0, 0.7)
    assert c.choose() == 0  # a second plain step: c(0) follows the lower time
    c.observe(0, 0, 0.5)
    assert c.cost[1] == 1.0 and c.cost[0] == 0.5
    c.observe(0, 0, 1.5)  # a slower plain step later moves it up by the average only
    assert c.cost[0] == pytest.approx(0.8 * 0.5 + 0.2 * 1.5)
    c.observe(0, 0, 0.5)
    assert c.cost[0] == 0.5
    assert c.cost[3] is None and c._cost_estimate(3) == pytest.approx(0.5 + 3 * 0.5)  # extrapolated
    c.observe(3, 3, 1.4)
    assert c._cost_estimate(2) == pytest.approx(1.2)  # interpolated


def test_bad_content_costs_at_most_one_deep_round():
    """On content the drafter never predicts, the deepest (dearest) chain is never tried: the first
    rounds draft one token, and the costs extrapolated from it rule deeper chains out."""
    c = DepthChooser(3)
    picks = run(c, 300, accepted_of=lambda d: 0, cost_of=lambda d: 1.0 + 0.5 * d)
    assert max(picks) == 1


def test_probes_visit_the_neighbours_of_the_chosen_depth():
    """Acceptance that ends at depth 3 on a chooser allowed 7: once it settles, its probes are the
    depths around 3 only, so it never pays for a deep chain the drafts cannot fill."""
    c = DepthChooser(7)
    picks = run(c, 400, accepted_of=lambda d: min(d, 3), cost_of=lambda d: 1.0 + 0.3 * d)
    assert c.best() == 3
    late = picks[200:]
    assert late.count(3) >= len(late) - len(late) // 16 - 1
    assert set(late) <= {2, 3, 4}, f"probes beyond the neighbours: {sorted(set(late))}"


def test_expected_tokens_follows_the_chain_rule():
    c = DepthChooser(3)
    c.tried[1:] = [10.0, 8.0, 4.0]
    c.accepted[1:] = [8.0, 4.0, 0.0]
    p1 = 9 / 12  # each position's prior: two tries at the position before it (p_1's at 1/2)
    p2 = (4 + 2 * p1) / 10
    p3 = (0 + 2 * p2) / 6
    assert c.expected_tokens(0) == 1.0
    assert c.expected_tokens(3) == pytest.approx(1 + p1 + p1 * p2 + p1 * p2 * p3)


def test_an_untried_position_inherits_the_rate_before_it_floored_at_half_under_fixed_costs():
    measured, fixed = DepthChooser(4), DepthChooser(4, cost=lambda d: 1.0 + 0.3 * d)
    for c in (measured, fixed):
        c.tried[1:3] = [20.0, 18.0]
        c.accepted[1:3] = [18.0, 17.0]
    p1, p2 = 19 / 22, (17 + 2 * 19 / 22) / 20
    for c in (measured, fixed):  # a landing chain's deep positions start where the last tried one is
        assert c.acceptance(3) == pytest.approx(p2) and c.acceptance(4) == pytest.approx(p2)
        c.cost = [1.0 + 0.25 * d for d in range(5)]
        assert c.best() == 4  # so it is drafted deep before the deep positions were ever tried
    # Under sampling a poor first position does not drag the untried ones below 1/2: a few rejected
    # drafts would otherwise keep a long context on plain steps (docs/speculative.md §8).
    measured, fixed = DepthChooser(4), DepthChooser(4, cost=lambda d: 1.0 + 0.3 * d)
    for c in (measured, fixed):
        c.tried[1], c.accepted[1] = 10.0, 1.0
    q1 = (1 + 2 * 0.5) / 12
    assert measured.acceptance(2) == pytest.approx(q1)
    assert fixed.acceptance(1) == pytest.approx(q1) and fixed.acceptance(2) == fixed.acceptance(4) == 0.5


def test_good_drafts_and_cheap_verify_draft_deep():
    c = DepthChooser(4)
    picks = run(c, 200, accepted_of=lambda d: d, cost_of=lambda d: 1.0 + 0.1 * d)
    assert c.best() == 4
    assert picks[-50:].count(4) >= 40  # the rest are probes of depth 3


def test_useless_drafts_fall_back_to_plain_steps_and_probe_ever_less_often():
    c = DepthChooser(3)
    picks = run(c, 400, accepted_of=lambda d: 0, cost_of=lambda d: 1.0 + 0.5 * d)
    assert c.best() == 0
    probes = [i for i, d in enumerate(picks) if d and i > 3]  # after the first rounds: depth-1 probes only
    assert probes and all(picks[i] == 1 for i in probes)
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert gaps == sorted(gaps) and gaps[-1] == DepthChooser.MAX_PROBE_GAP  # 16, 32, 64, 64, ...
    assert picks[-100:].count(0) >= 98  # still probes now and then, in case content changes


def test_the_choice_follows_a_change_of_content():
    c = DepthChooser(3)
    run(c, 100, accepted_of=lambda d: 0, cost_of=lambda d: 1.0 + 0.3 * d)
    assert c.best() == 0
    run(c, 200, accepted_of=lambda d: d, cost_of=lambda d: 1.0 + 0.3 * d)
    assert c.best() == 3


def test_drafts_must_promise_more_than_the_margin():
    """A draft that pays a little less than the margin is left for plain steps; a little more is taken."""
    def chooser(p1):
        c = DepthChooser(1)
        c.cost = [1.0, 1.2]
        c.tried[1], c.accepted[1] = 1000.0, 1000.0 * p1
        return c

    gain = lambda p1: (1 + p1) / 1.2 - 1  # expected tokens per cost of a one-token draft, against plain
    below, above = 0.2 + 1.2 * (DepthChooser.MARGIN - 0.01), 0.2 + 1.2 * (DepthChooser.MARGIN + 0.01)
    assert 0 < gain(below) < DepthChooser.MARGIN < gain(above)
    assert chooser(below).best() == 0
    assert chooser(above).best() == 1


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"\[speculative\]"):
        DepthChooser(0)
    c = DepthChooser(2)
    for depth, acc in ((3, 0), (-1, 0), (1, 2)):
        with pytest.raises(ValueError, match=r"\[speculative\] observe"):
            c.observe(depth, acc, 1.0)


def test_policy_parse_auto():
    assert TreePolicy.parse("auto") == TreePolicy.auto() == TreePolicy(1, 7, 8, adaptive=True, lookup=True)
    assert TreePolicy.parse("auto:5") == TreePolicy.auto(5)
    assert TreePolicy.parse("auto:5:nolookup") == TreePolicy.auto(5, lookup=False) == TreePolicy(1, 5, 6, adaptive=True)
    assert TreePolicy.parse("auto:nolookup") == TreePolicy.auto(lookup=False)
    for bad in ("auto:x", "auto:", "auto:1:2", "auto:nolookup:3", "auto:3:nolookup:x", "chain:3:nolookup", "nolookup"):
        with pytest.raises(ValueError, match=r"\[speculative\] tree policy"):
            TreePolicy.parse(bad)
    with pytest.raises(ValueError, match=r"\[speculative\] depth must be an integer in \[1, 64\], got 0"):
        TreePolicy.parse("auto:0")
    with pytest.raises(ValueError, match=r"\[speculative\].*chain"):
        TreePolicy(2, 3, 6, adaptive=True)
    with pytest.raises(ValueError, match=r"\[speculative\] lookup drafts need an adaptive policy"):
        TreePolicy(1, 3, 4, lookup=True)


class Scripted:
    """Stands in for DepthChooser: depths from a fixed cycle, so plain steps come at known rounds."""

    CYCLE = [0, 0, 2, 0, 3, 1, 0, 3, 3, 0]
    plain_cost = None

    def __init__(self, max_depth, cost=None, previous=None, costs_of=None):
        self.i, self.seen = -1, []
        self.fixed = cost is not None

    def set_fixed_cost(self, cost):
        pass

    def use_plain_cost(self, seconds):
        pass

    def choose(self):
        self.i += 1
        return self.CYCLE[self.i % len(self.CYCLE)]

    def observe(self, depth, accepted, seconds):
        self.seen.append((depth, accepted))


@pytest.mark.parametrize("lazy", [True, False])
@pytest.mark.parametrize("mix", [1.0, 0.05])
def test_plain_step_rounds_keep_greedy_output_identical(monkeypatch, lazy, mix):
    spec, core = make_target(mix=mix)
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    drafter.lazy_logits = lazy
    monkeypatch.setattr(generator_module, "DepthChooser", Scripted)
    plain_t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    speculative_t = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    rng = np.random.default_rng(4)
    for prompt in (rng.integers(0, 64, n).tolist() for n in (1, 9, 30)):
        want = take(plain_steps(plain_t, prompt, SamplingParams()), 50)
        gen = SpeculativeGenerator(speculative_t, Eagle3Proposer(drafter), TreePolicy.auto(3))
        got = take(gen.steps(prompt, SamplingParams()), 50)
        assert got == want
        assert np.array_equal(probe_logits(speculative_t, len(prompt) + 49).view(np.uint32),
                              probe_logits(plain_t, len(prompt) + 49).view(np.uint32))
        m = gen.metrics()
        assert m["num_draft_tokens"] < 3 * m["num_drafts"]  # plain steps drafted nothing


@pytest.mark.parametrize("lazy", [True, False])
def test_every_committed_pair_reaches_the_drafter_once_in_order(monkeypatch, lazy):
    """Plain-step rounds skip the proposer; before its next propose it must ingest every (feature, next
    token) pair committed since, in order: over a generation, the pairs handed to ingest are exactly the
    committed sequence's, with features bit-identical to a plain forward of that sequence."""
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    drafter.lazy_logits = lazy
    monkeypatch.setattr(generator_module, "DepthChooser", Scripted)
    gen, calls, seq = run_recording_ingests(spec, core, drafter, [5, 17, 2, 40], 60)
    assert len(calls) >= 5 and pairs_are_the_committed_sequence(spec, core, calls, seq) > 40


def run_recording_ingests(spec, core, drafter, prompt, n):
    """A greedy auto(3) generation of n tokens whose proposer records every ingest:
    (generator, [(features, tokens) per ingest], prompt + generated tokens)."""
    calls = []

    class Recording(Eagle3Proposer):
        def ingest(self, features, tokens):
            calls.append((features.copy(), tokens.copy()))
            super().ingest(features, tokens)

    target = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    gen = SpeculativeGenerator(target, Recording(drafter), TreePolicy.auto(3))
    return gen, calls, prompt + take(gen.steps(prompt, SamplingParams()), n)


def pairs_are_the_committed_sequence(spec, core, calls, seq) -> int:
    """Asserts that the ingested pairs are (feature of position p, token p + 1) of `seq` in order, with
    the features bit-identical to a plain forward's; returns how many pairs were ingested."""
    aux = np.concatenate([a for a, _ in calls])
    tokens = np.concatenate([tk for _, tk in calls]).tolist()
    assert tokens == seq[1 : 1 + len(tokens)]
    ref = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    want = ref.forward(np.array(seq[: len(tokens)], np.int32), logits="none", capture_aux=True)["aux"]
    assert np.array_equal(aux.view(np.uint32), want.view(np.uint32))
    return len(tokens)


def test_sampled_depth_depends_on_the_seed_alone():
    """Under sampling the depth follows acceptance and a fixed cost model, never timings: seeded runs
    repeat round for round, their tokens plain sampled decoding's; a useless (random) drafter still
    drops to plain steps."""
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    plain = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    runs, metrics = [], []
    for seed in (11, 11, 12):
        sampling = SamplingParams(temperature=2.0, seed=seed)
        gen = SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy.auto(3))
        runs.append(take(gen.steps([4, 5, 6], sampling), 60))
        metrics.append(gen.metrics())
        assert runs[-1] == take(plain_steps(plain, [4, 5, 6], sampling), 60)
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert metrics[0] == {**metrics[1], "propose_s": metrics[0]["propose_s"], "verify_s": metrics[0]["verify_s"]}
    m = metrics[0]
    assert m["num_draft_tokens"] < m["num_drafts"]  # mostly plain steps


def test_a_greedy_chooser_starts_from_the_previous_ones_costs_and_acceptance():
    first = DepthChooser(3)
    run(first, 100, accepted_of=lambda d: 0, cost_of=lambda d: 1.0 + 0.5 * d)
    second = DepthChooser(3, previous=first)
    assert second.cost == first.cost and not any(second.fresh)  # steering the warm-up; each is timed afresh
    assert second.total_tried()[1] == pytest.approx(min(first.tried[1], DepthChooser.CARRIED_TRIES))
    assert second.total_accepted()[1] / second.total_tried()[1] == pytest.approx(first.accepted[1] / first.tried[1])
    assert second.tried == [0.0] * 4  # its own tries start at none
    assert second.choose() == 0  # no drafts to re-measure what the last generation learnt
    assert DepthChooser(4, previous=first).choose() == 1  # another max depth starts afresh
    fixed = DepthChooser(3, cost=lambda d: 1.0 + 0.25 * d, previous=first)
    assert not fixed.warm and fixed.total_tried() == [0.0] * 4  # sampling: nothing carries over


def test_a_carried_chooser_drops_to_plain_soon_when_drafts_stop_landing():
    """After a workload where every draft landed, content the drafter misses (a chat after code) turns
    the carried-over chooser to plain steps within a handful of drafting rounds, not dozens."""
    first = DepthChooser(3)
    run(first, 300, accepted_of=lambda d: d, cost_of=lambda d: 1.0 + 0.4 * d)
    assert first.best() == 3
    second = DepthChooser(3, previous=first)
    picks = run(second, 60, accepted_of=lambda d: 0, cost_of=lambda d: 1.0 + 0.4 * d)
    assert picks[0] == 1 and max(picks[:DepthChooser.WARMUP_ROUNDS]) == 1  # the warm-up drafts one token at most
    assert picks[7:15] == [0] * 8  # plain steps once the warm-up is over
    assert sum(d > 0 for d in picks[DepthChooser.WARMUP_ROUNDS:]) <= 4  # with only sparse one-token probes


def test_carried_deep_acceptance_fades_when_first_drafts_half_land():
    """Chat after raw code: first drafts land half the time, deeper ones never. The previous generation's
    deep acceptance (every draft landed) fades with each drafting round, so chains of 2-3 tokens stop
    within a few rounds instead of running until the deep positions gather misses of their own."""
    first = DepthChooser(3)
    cost = lambda d: 1.0 if d == 0 else 1.2 + 0.2 * (d - 1)  # noqa: E731
    run(first, 300, accepted_of=lambda d: d, cost_of=cost)
    assert first.best() == 3
    second = DepthChooser(3, previous=first)
    lands = iter([1, 0] * 100)
    picks = run(second, 60, accepted_of=lambda d: min(1, d) and next(lands), cost_of=cost)
    assert sum(d >= 2 for d in picks[12:]) <= 3  # one token a round (deeper only as sparse probes)
    assert sum(d == 1 for d in picks[12:]) >= 40  # and drafting goes on where it pays


def test_a_carried_cost_is_replaced_by_the_first_measurement_at_this_context():
    """Costs carried from a generation at another context length steer the first choices only: the
    first round of a depth measured here replaces its carried cost; later ones average in."""
    first = DepthChooser(3)
    run(first, 100, accepted_of=lambda d: d, cost_of=lambda d: 2.0 + 1.0 * d)  # a long context: dear rounds
    second = DepthChooser(3, previous=first)
    assert second.cost == first.cost
    for _ in range(DepthChooser.WARMUP_ROUNDS):
        d = second.choose()
        second.observe(d, d, 99.0)  # the warm-up (the first round ingests the prompt): no round's cost
    assert second.cost == first.cost
    for _ in range(DepthChooser.PLAIN_TIMINGS):  # plain steps timed here
        assert second.choose() == 0
        second.observe(0, 0, 2.0)
    d = second.choose()
    assert d > 0
    second.observe(d, d, 0.5 + 0.2 * d)  # a short context: every round cheaper
    assert second.cost[d] == pytest.approx(0.5 + 0.2 * d)  # replaced, not 0.8 old + 0.2 new
    other = [k for k in range(4) if k != d]
    assert all(second.cost[k] == first.cost[k] for k in other if k > 0)  # the others wait for their own round
    second.observe(d, d, 1.0)
    assert second.cost[d] == pytest.approx(0.8 * (0.5 + 0.2 * d) + 0.2 * 1.0)


def test_a_warm_chooser_times_its_own_plain_step():
    """A plain step's carried cost is not trusted: it is every choice's yardstick, and drafting that a
    stale, dear value favours would never run the plain steps that correct it (chat after raw code
    drafted two tokens a round at p1 ~ 0.35 for three replies on a 5.1 ms plain step carried over, where
    one took 3.3-3.8 ms). The next generation times its own, then stops drafting what does not pay."""
    first = DepthChooser(3)
    run(first, 100, accepted_of=lambda d: 1 if d else 0, cost_of=lambda d: 5.0 if d == 0 else 4.3 + 0.7 * (d - 1))
    assert first.best() > 0  # there, with plain steps timed dear, drafting paid
    second = DepthChooser(3, previous=first)
    acc = iter([1, 0, 0, 0, 0] * 40)  # a first draft lands one round in five here
    picks = run(second, 60, accepted_of=lambda d: next(acc) if d else 0,
                cost_of=lambda d: 3.3 if d == 0 else 4.3 + 0.7 * (d - 1))
    w, n = DepthChooser.WARMUP_ROUNDS, DepthChooser.PLAIN_TIMINGS
    assert picks[w:w + n] == [0] * n and second.cost[0] == pytest.approx(3.3)  # timed here after the warm-up
    assert sum(d > 0 for d in picks[20:]) <= 4  # plain steps, with sparse probes


def test_a_landed_probe_is_followed_by_another():
    """While plain steps win, a one-token probe that lands is tried again the next round, so a few
    landed drafts can overturn what an earlier reply left (a probe that misses waits its gap)."""
    first = DepthChooser(3)
    run(first, 200, accepted_of=lambda d: 0, cost_of=lambda d: 1.0 + 0.5 * d)
    second = DepthChooser(3, previous=first)
    picks = []
    for _ in range(80):
        d = second.choose()
        picks.append(d)
        second.observe(d, min(d, 1), 1.0 + 0.5 * d)  # now every first draft lands
    first_probe = picks.index(1)
    assert picks[first_probe + 1] == 1  # probed again at once
    assert all(d > 0 for d in picks[first_probe:first_probe + 6])  # and drafting from then on


def test_fixed_cost_chooser_ignores_times():
    c = DepthChooser(3, cost=lambda d: 1.0 + 0.25 * d)
    assert c.cost == [1.0, 1.25, 1.5, 1.75]
    assert c.choose() == 1
    c.observe(1, 1, 123.0)
    assert c.cost == [1.0, 1.25, 1.5, 1.75]
    picks = run(c, 100, accepted_of=lambda d: d, cost_of=lambda d: 1e9)  # times would say: never draft
    assert c.best() == 3 and picks[-20:].count(3) >= 18


def test_fixed_cost_grows_with_the_context():
    from eyas.speculative.adaptive import fixed_cost, lookup_fixed_cost

    assert [fixed_cost(d) for d in range(4)] == pytest.approx([1.0 + 0.18 * d for d in range(4)])  # short context
    for share in (0.1, 0.5, 1.0):
        costs = [fixed_cost(d, share) for d in range(5)]
        assert costs[0] == 1.0  # a plain step is the unit at every context
        assert all(b > a for a, b in zip(costs, costs[1:]))
        assert all(fixed_cost(d, share) > fixed_cost(d, share / 2) for d in range(1, 5))
    # fitted to sampled rounds measured on chat (~0.05 of the weights' bytes: chains of 1 and 3 at
    # 1.11-1.20 and 1.34-1.60 steps) and, a little below them, on 2.3K-3.3K-token documents (~0.63:
    # 1.48 and 1.97; docs/speculative.md §3)
    assert 1.15 < fixed_cost(1, 0.05) < 1.25 and 1.5 < fixed_cost(3, 0.05) < 1.7
    assert 1.2 < fixed_cost(1, 0.63) < 1.3 and 1.6 < fixed_cost(3, 0.63) < 1.8
    # a copy runs no drafter: cheaper than a drafted chain of its length, dearer with the context
    for d in range(1, 5):
        assert 1.0 < lookup_fixed_cost(d) < fixed_cost(d) and lookup_fixed_cost(d, 0.63) > lookup_fixed_cost(d)


def test_fixed_cost_chooser_drafts_less_at_long_context():
    from eyas.speculative.adaptive import fixed_cost

    c = DepthChooser(3, cost=fixed_cost)
    for _ in range(40):  # position 1 accepted 1 time in 2, deeper ones never tried past it
        c.tried[1] = c.DECAY * c.tried[1] + 1.0
        c.accepted[1] = c.DECAY * c.accepted[1] + 0.5
    assert c.best() == 2  # 1.75 tokens for 1.36 steps beat 1.5 for 1.18
    c.set_fixed_cost(lambda d: fixed_cost(d, 1.0))
    assert c.best() == 1  # 1.5 tokens for ~1.24 steps
    c.tried[1], c.accepted[1] = 100.0, 25.0  # position 1 accepted 1 time in 4
    assert c.best() == 0  # ~1.25 tokens for ~1.24 steps: plain steps at long context
    c.set_fixed_cost(fixed_cost)
    assert c.best() == 1  # ... but a draft at short context (~1.25 tokens for 1.18 steps)
    with pytest.raises(ValueError, match="measures its costs"):
        DepthChooser(3).set_fixed_cost(fixed_cost)


def test_fixed_cost_chooser_explores_a_first_draft_after_an_early_rejection():
    """Under sampling one rejected first draft must not settle a long document on plain steps: with
    few tries the draft-or-plain choice is optimistic, so content the drafter predicts 2 times in 3
    is drafted within a few rounds; a drafter that is never right gets only a few tries."""
    cost = lambda d: 1.0 + 0.45 * d  # a context and machine where a first draft costs ~1.45 steps
    # accepted in rounds 2 and 3 of every 3 (2/3), rejected first
    c = DepthChooser(3, cost=cost)
    outcomes = iter([0, 1, 1] * 100)
    picks = run(c, 60, accepted_of=lambda d: next(outcomes) if d else 0, cost_of=lambda d: 0.0)
    assert picks[:3] == [1, 1, 1], picks[:6]  # the rejection in round 1 does not stop the drafts
    assert picks[-20:].count(0) <= 2

    # the old rule: no optimism, so the first rejection meant plain steps until a probe
    old = DepthChooser(3, cost=cost)
    old.EXPLORE_TRIES = 0.0
    outcomes = iter([0, 1, 1] * 100)
    assert run(old, 3, accepted_of=lambda d: next(outcomes) if d else 0, cost_of=lambda d: 0.0)[1] == 0

    never = DepthChooser(3, cost=cost)
    picks = run(never, 40, accepted_of=lambda d: 0, cost_of=lambda d: 0.0)
    assert sum(1 for d in picks[:16] if d) <= 3, picks[:16]


def test_sampled_rounds_price_the_context(monkeypatch):
    """Under sampling the generator hands the chooser the fixed model at the current context:
    dearer after a long prompt, and a function of the committed length alone."""
    import eyas

    seen = []
    orig = DepthChooser.set_fixed_cost
    monkeypatch.setattr(DepthChooser, "set_fixed_cost", lambda self, cost: (orig(self, cost), seen.append(list(self.cost))))
    m = eyas.load(max_context=2048)
    short_prompt, long_prompt = "Tell me about owls.", "Owls hunt at night. " * 150
    costs = {}
    for name, prompt in (("short", short_prompt), ("long", long_prompt)):
        seen.clear()
        m.generate(prompt, max_tokens=6, temperature=0.8, seed=3)
        assert seen, "the sampled chooser was never priced"
        costs[name] = seen[0]
    assert costs["long"][1] > costs["short"][1] + 0.02  # ~1.21 against ~1.18 steps at ~1.1K tokens
    seen.clear()
    m.generate(long_prompt, max_tokens=6, temperature=0.8, seed=3)
    assert seen[0] == costs["long"]  # the same context gives the same model on every run


def test_choosers_can_share_one_cost_table():
    """Copies of every match size cost the same per depth: a chooser built with costs_of prices its
    depths from the rounds of both, while its acceptance stays its own."""
    a = DepthChooser(3)
    b = DepthChooser(3, costs_of=a)
    run(a, 40, accepted_of=lambda d: d, cost_of=lambda d: 1.0 + 0.2 * d)
    assert b.cost is a.cost and b.cost[1] == pytest.approx(1.2)
    assert b.tried == [0.0] * 4 and a.tried[1] > 0
    for _ in range(DepthChooser.WARMUP_ROUNDS + 1):  # past b's own warm-up
        b.choose()
    b.observe(2, 0, 5.0)  # b's own round moves the shared price of depth 2
    assert a.cost[2] == pytest.approx(0.8 * 1.4 + 0.2 * 5.0)
    with pytest.raises(ValueError, match=r"\[speculative\] costs_of"):
        DepthChooser(4, costs_of=a)
    with pytest.raises(ValueError, match=r"\[speculative\] costs_of"):
        DepthChooser(3, cost=lambda d: 1.0, costs_of=a)


@pytest.mark.parametrize("top, drafts", [(0.2, False), (0.95, True)])
def test_a_sampled_chooser_drafts_only_where_the_rows_top_probability_allows(top, drafts):
    """Under sampling a draft lands only when the draw equals it, so the target rows' top probability
    (AcceptanceBound, fed by plain steps) caps every p_j: at a high temperature (top ~0.2) the chooser
    neither explores nor probes; where the target is sure it drafts as before."""
    c = DepthChooser(3, cost=lambda d: fixed_cost(d))
    c.bound = AcceptanceBound()
    c.bound.observe(top)
    picks = []
    for _ in range(200):
        d = c.choose()
        picks.append(d)
        c.observe(d, min(d, 1), 0.0)  # every first draft would land, were one drafted
        if d == 0:
            c.bound.observe(top)
    assert (sum(picks) > 100) == drafts
    if not drafts:
        assert picks == [0] * 200  # not one exploring draft or probe


def test_acceptance_bound_is_a_decayed_mean():
    b = AcceptanceBound()
    assert b.value == 1.0  # none observed (greedy): no bound
    for p in (0.2, 0.4):
        b.observe(p)
    assert b.value == pytest.approx((0.9 * 0.2 + 0.4) / (0.9 + 1.0))
