"""Families that combine other families: "parallel" (every drafter drafts, one merged tree) and "auto"
(one drafter per round, chosen from measured acceptance), the `Proposer.observe` hook that feeds auto,
and a server request pinned to one drafter family. The end-to-end tests run the real default model
with its bundled EAGLE-3 drafter twice over (as "eagle3" and a test family "eagle3b"), so they do not
depend on another family's runtime being built."""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys

import numpy as np
import pytest

import eyas.api as api
from eyas.sampling import SamplingParams
from eyas.speculative import SpeculativeGenerator, TreePolicy, families, make_proposer
from eyas.speculative import proposer as proposer_module
from eyas.speculative.proposer import Proposer
from eyas.speculative.proposers.auto import AutoProposer, FamilyChooser
from eyas.speculative.proposers.multi import MultiProposer
from eyas.speculative.proposers.parallel import ParallelProposer
from tests.test_speculative_proposer import Oracle, Random, target, tree_from  # noqa: F401  (target: a fixture)
from tests.test_speculative_greedy import take


class Recorder(Proposer):
    """Keeps every ingested pair (so it supports truncate) and proposes a fixed chain with scores."""

    family = "recorder"

    def __init__(self, layers, chain=(1, 2), score=-1.0):
        self.aux_layers = self.feature_layers = list(layers)
        self.chain, self.score = list(chain), score
        self.features, self.tokens, self.calls = [], [], collections.Counter()

    def reset(self, capacity):
        self.features, self.tokens = [], []

    def ingest(self, features, tokens):
        self.calls["ingest"] += 1
        self.features += list(features)
        self.tokens += tokens.tolist()

    def propose(self, policy):
        self.calls["propose"] += 1
        t = tree_from([self.tokens[-1]] + self.chain, [-1] + list(range(len(self.chain))))
        t.scores = np.array([0.0] + [self.score * (i + 1) for i in range(len(self.chain))], np.float32)
        return t

    @property
    def length(self):
        return len(self.tokens)

    def truncate(self, n):
        del self.features[n:], self.tokens[n:]

    def fork(self):
        return Recorder(self.feature_layers, self.chain, self.score)


def features_of(layers, m, width=2):
    """F32[m, len(layers) * width]: row r, layer l's columns hold 1000 * l + r."""
    return np.concatenate([np.full((m, width), 1000.0 * layer) + np.arange(m)[:, None] for layer in layers],
                          axis=1).astype(np.float32)


# ---- the observe hook --------------------------------------------------------------------------


class Observed(Random):
    """Random trees; records (accepted, drafted_depth) per observe and each proposed tree's depth."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.observed, self.depths = [], []

    def propose(self, policy):
        tree = super().propose(policy)
        self.depths.append(int(tree.depths.max()))
        return tree

    def observe(self, accepted, drafted_depth):
        self.observed.append((accepted, drafted_depth))


class ObservedOracle(Oracle):
    observe = Observed.observe


def test_the_generator_tells_the_proposer_each_rounds_acceptance(target):
    from tests.test_speculative_proposer import plain_greedy

    prompt = [3, 14, 15, 9]
    want = plain_greedy(target, prompt, 41)
    oracle = ObservedOracle(prompt + want)
    oracle.observed = []
    gen = SpeculativeGenerator(target, oracle, TreePolicy.chain(4))
    assert take(gen.steps(prompt, SamplingParams()), 41) == want
    assert oracle.observed == [(4, 4)] * 8  # every round fully accepted

    random = Observed(seed=5)
    gen = SpeculativeGenerator(target, random, TreePolicy(3, 3, 8))
    assert take(gen.steps(list(range(12)), SamplingParams()), 30) == plain_greedy(target, list(range(12)), 30)
    m = gen.metrics()
    assert len(random.observed) == m["num_drafts"] > 0
    assert sum(a for a, _ in random.observed) == m["num_accepted_tokens"]
    assert [d for _, d in random.observed] == random.depths  # right after each proposed tree's accept
    assert all(0 <= a <= d for a, d in random.observed)


# ---- MultiProposer: layers and columns --------------------------------------------------------


def test_multi_proposer_reads_the_union_of_layers_and_slices_each_ones_columns():
    a, b = Recorder([15, 2, 27]), Recorder([30, 2])
    p = ParallelProposer({"a": a, "b": b})
    assert isinstance(p, MultiProposer) and p.families == ["a", "b"]
    assert p.aux_layers == p.feature_layers == [2, 15, 27, 30] and p.target_head is None
    p.reset(64)
    p.ingest(features_of([2, 15, 27, 30], 3), np.array([7, 8, 9], np.int32))
    # Each sub-proposer sees its own layers' columns, in its own order.
    assert np.array_equal(np.array(a.features), features_of([15, 2, 27], 3))
    assert np.array_equal(np.array(b.features), features_of([30, 2], 3))
    assert a.tokens == b.tokens == [7, 8, 9] and p.length == 3
    p.truncate(1)
    assert a.tokens == b.tokens == [7]
    with pytest.raises(ValueError, match=r"\[speculative\] truncate\(2\) outside \[0, 1\]"):
        p.truncate(2)
    fork = p.fork()
    assert fork.subs["a"] is not a and fork.feature_layers == p.feature_layers and fork.length == 0


def test_parallel_merges_the_drafters_trees():
    a = Recorder([2], chain=(5, 6), score=-1.0)
    b = Recorder([2], chain=(5, 7, 8), score=-0.5)
    p = ParallelProposer({"a": a, "b": b})
    p.reset(64)
    p.ingest(features_of([2], 1), np.array([9], np.int32))
    t = p.propose(TreePolicy(2, 3, 4))
    # Shared (5,) scores max(-1, -0.5); then (5, 7) -0.1, (5, 6) -2 and (5, 7, 8) -1.5: the best three drafted.
    assert t.tokens.tolist() == [9, 5, 7, 8] and t.parents.tolist() == [-1, 0, 1, 2]
    assert t.scores.tolist() == [0.0, -0.5, -1.0, -1.5]
    assert a.calls["propose"] == b.calls["propose"] == 1


# ---- auto: the schedule, the backlog ----------------------------------------------------------


def test_family_chooser_tries_the_others_when_the_first_drafts_poorly_then_keeps_the_best():
    c = FamilyChooser(3)
    accepted = {0: 0, 1: 3, 2: 0}
    picks = []
    for _ in range(6 + 400):
        i = c.choose()
        picks.append(i)
        c.observe(i, accepted[i], 3)
    first = FamilyChooser.FIRST_ROUNDS
    # Family 0 first; it accepts nothing, so the others get PROBE_ROUNDS each.
    assert picks[: first + 4] == [0] * first + [1, 1, 2, 2]
    rest = picks[first + 4:]
    assert c.best() == 1 and rest.count(1) == len(rest) - c.reprobes
    # The others come back in turn, after 16 rounds, then at gaps doubling up to REPROBE_MAX.
    at = [r for r, i in enumerate(rest) if i != 1]
    assert [rest[r] for r in at[:3]] == [0, 2, 0]
    assert at[0] == FamilyChooser.REPROBE_FIRST - 1
    assert [b - a for a, b in zip(at, at[1:])] == [32, 64, 128, 128]
    tie = FamilyChooser(2)
    assert [tie.choose() for _ in range(first + 2)] == [0] * first + [1, 1] and tie.choose() == 0  # no data: the first


def test_family_chooser_never_tries_the_others_while_the_first_drafts_well():
    c = FamilyChooser(3)
    for _ in range(200):  # one drafted token a round, accepted 2 times in 3: well, though under 1 per round
        i = c.choose()
        c.observe(i, int(sum(c.chosen) % 3 != 0) if i == 0 else 1, 1)
    assert c.chosen == [200, 0, 0]
    # Content the first family drafts poorly: the others are tried, and the better one takes over.
    for _ in range(200):
        i = c.choose()
        c.observe(i, 0 if i == 0 else 3, 3)
    assert c.chosen[1] > 100 and c.chosen[2] >= FamilyChooser.PROBE_ROUNDS and c.best() == 1


def test_family_chooser_keeps_the_first_family_unless_another_is_clearly_better():
    for other, expect in ((9, 0), (12, 1), (0, 0)):
        c = FamilyChooser(2)
        c.drafted, c.accepted = [16, 16], [8, other]  # accepted share 0.5 against 0.5625, 0.75, 0
        assert c.best() == expect
    c = FamilyChooser(2)  # both draft poorly: the margin is relative, so 0.25 beats 0.06
    c.drafted, c.accepted = [16, 16], [1, 4]
    assert c.best() == 1


def test_auto_ingests_only_into_the_drafting_family_and_the_others_catch_up(monkeypatch):
    a, b = Recorder([2, 15]), Recorder([15])
    p = AutoProposer({"a": a, "b": b})
    p.reset(64)
    sequence = []
    monkeypatch.setattr(FamilyChooser, "FIRST_ROUNDS", 2)
    for r in range(4):  # a drafts twice, accepts nothing, so b is tried twice
        tokens = np.arange(3 * r, 3 * r + 3, dtype=np.int32)
        sequence += tokens.tolist()
        p.ingest(features_of([2, 15], 3), tokens)
        drafted_by = p.drafting
        assert drafted_by == "aabb"[r]
        assert p.caught_up == (r == 2)  # b's first round also takes the pairs of a's two rounds
        p.propose(TreePolicy.chain(2))
        p.observe(0 if drafted_by == "a" else 2, 2)
        assert (a if drafted_by == "a" else b).tokens == sequence  # the drafting family holds every pair
    assert a.calls["ingest"] == a.calls["propose"] == 2 and b.calls["ingest"] == b.calls["propose"] == 2
    assert a.tokens == sequence[:6] and p.length == 12  # a missed b's rounds: they wait in a's backlog
    assert np.array_equal(np.array(b.features)[:3], features_of([15], 3))
    p.ingest(features_of([2, 15], 1), np.array([50], np.int32))
    assert p.drafting == "b" and b.tokens == sequence + [50] and a.tokens == sequence[:6]  # b accepted more
    assert not p.caught_up  # b drafted the round before: nothing held back
    p.truncate(8)  # the next request keeps 8 pairs: a has 6 of them ingested and 2 in its backlog, b all
    assert b.tokens == sequence[:8] and a.tokens == sequence[:6] and p.length == 8 and p.chooser.drafted == [0, 0]
    p.reset(64)
    assert p.length == 0 and a.tokens == b.tokens == []


def test_auto_truncate_keeps_a_backlog_prefix(monkeypatch):
    monkeypatch.setattr(FamilyChooser, "PROBE_ROUNDS", 1)  # a drafts once, accepts nothing: b is tried
    monkeypatch.setattr(FamilyChooser, "FIRST_ROUNDS", 1)
    a, b = Recorder([2]), Recorder([2])
    p = AutoProposer({"a": a, "b": b})
    p.reset(64)
    p.ingest(features_of([2], 4), np.arange(4, dtype=np.int32))  # a drafts: b's backlog holds 4 pairs
    p.propose(TreePolicy.chain(1))
    p.observe(0, 1)
    p.ingest(features_of([2], 2), np.arange(4, 6, dtype=np.int32))  # b drafts, catching up all 6
    p.truncate(5)
    assert a.tokens == [0, 1, 2, 3] and b.tokens == [0, 1, 2, 3, 4] and p.length == 5
    p.ingest(features_of([2], 1), np.array([9], np.int32))  # a new request: a drafts first again
    assert p.drafting == "a" and a.tokens == [0, 1, 2, 3, 4, 9]


def test_auto_length_counts_no_backlog_of_a_family_that_cannot_keep_its_pairs(monkeypatch):
    monkeypatch.setattr(FamilyChooser, "PROBE_ROUNDS", 1)
    monkeypatch.setattr(FamilyChooser, "FIRST_ROUNDS", 1)
    keeps, forgets = Recorder([2]), Random()  # Random: the protocol's length 0, truncate(0) only
    forgets.aux_layers = forgets.feature_layers = [2]
    p = AutoProposer({"forgets": forgets, "keeps": keeps})
    p.reset(64)
    p.ingest(features_of([2], 3, width=64), np.arange(3, dtype=np.int32))  # "forgets" drafts and ingests 3 pairs
    p.propose(TreePolicy.chain(1))
    p.observe(0, 1)
    p.ingest(features_of([2], 1, width=64), np.array([3], np.int32))  # "keeps" drafts: 1 pair in forgets' backlog
    assert p.drafting == "keeps" and keeps.length == 4
    assert p.length == 0  # forgets cannot keep its 3 pairs, so its backlog follows nothing: reset, not truncate
    p.truncate(0)
    assert keeps.tokens == [] and p.length == 0


# ---- the factories ----------------------------------------------------------------------------


@pytest.fixture
def toy_families(monkeypatch):
    """Registers "one" and "two" (Recorders) and "nothing" (no drafter bundled: None)."""
    families()
    monkeypatch.setitem(proposer_module._FACTORIES, "one", lambda drafter, target: Recorder([1]))
    monkeypatch.setitem(proposer_module._FACTORIES, "two", lambda drafter, target: Recorder([2]))
    monkeypatch.setitem(proposer_module._FACTORIES, "nothing", lambda drafter, target: None)


def test_factories_build_each_family_and_leave_out_the_missing(toy_families):
    assert {"auto", "parallel"} <= set(families())
    p = make_proposer("auto", "default", None, families=["one", "nothing", "two"])
    assert isinstance(p, AutoProposer) and p.families == ["one", "two"] and p.feature_layers == [1, 2]
    p = make_proposer("parallel", {"two": "x", "one": "y"}, None)
    assert isinstance(p, ParallelProposer) and p.families == ["two", "one"]
    assert isinstance(make_proposer("auto", "default", None, families="nothing,one"), Recorder)  # one left: itself
    assert make_proposer("parallel", "default", None, families=["nothing"]) is None  # none left: plain decoding
    assert make_proposer("auto", "none", None) is None


@pytest.mark.parametrize("kw, message", [
    ({"families": ["one", "auto"]}, "'auto' cannot combine family 'auto'"),
    ({"families": ["one", "one"]}, "needs distinct sub-families"),
    ({"families": ["one", "medusa"]}, "unknown drafter family 'medusa'"),
    ({"families": ["one", "none"]}, "cannot combine family 'none'"),
    ({"drafter": "path/to/ckpt"}, "takes drafter 'default' .* or a \\{family: drafter\\} mapping"),
    ({"drafter": {"three": "x"}, "families": ["one", "two"]}, "drafters given for families \\['three'\\]"),
])
def test_factory_errors(toy_families, kw, message):
    kw = dict(kw)
    drafter = kw.pop("drafter", "default")
    with pytest.raises(ValueError, match=r"\[speculative\] (.* )?" + message):
        make_proposer("auto", drafter, None, **kw)


def test_pinned_view_drafts_with_one_family_over_the_parents_layers():
    a, b = Recorder([2]), Recorder([15])
    p = AutoProposer({"a": a, "b": b})
    view = p.pinned("b")
    assert view is p.pinned("b") and view.family == "b" and view.feature_layers == [2, 15]
    view.reset(64)
    view.ingest(features_of([2, 15], 2), np.array([4, 5], np.int32))
    view.propose(TreePolicy.chain(2))
    assert b.tokens == [4, 5] and np.array_equal(np.array(b.features), features_of([15], 2)) and a.calls["ingest"] == 0
    with pytest.raises(ValueError, match=r"\[speculative\] 'auto' drafts with a, b, not 'c'"):
        p.pinned("c")


# ---- the real default model and its bundled EAGLE-3 drafter -----------------------------------

PROMPTS = ["Write a Python function that reverses a list.", "Name three colors.", "Explain what a CPU cache is."]
BOTH = {"eagle3": "default", "eagle3b": "default"}


@pytest.fixture(scope="module")
def loaded():
    """The default model's LoadedModel, with "eagle3b" registered: the bundled EAGLE-3 drafter again."""
    from eyas.speculative.proposers import eagle3
    from tests.fixtures.default_model import load_or_skip

    result = load_or_skip()
    families()
    proposer_module._FACTORIES["eagle3b"] = eagle3.load
    if make_proposer("eagle3", "default", result) is None:
        pytest.skip("no bundled EAGLE-3 drafter fits the default model")
    yield result
    del proposer_module._FACTORIES["eagle3b"]


def model_with(loaded, proposer) -> api.Model:
    aux = list(proposer.aux_layers) if proposer is not None else []
    transformer = api.make_transformer(loaded.spec, loaded.weights, max_context=512, aux_layers=aux)
    return api.Model(loaded, transformer, proposer, 512)


@pytest.fixture(scope="module")
def plain(loaded):
    return model_with(loaded, None)


class Counting(Proposer):
    """Another proposer, its calls counted. garble: its trees' drafted tokens are replaced by a fixed
    map of them (deterministic and nearly never what the target says): a deliberately bad drafter."""

    def __init__(self, inner: Proposer, garble: bool = False):
        self.inner, self.garble = inner, garble
        self.calls = collections.Counter()
        self.observed = []

    @property
    def aux_layers(self):
        return self.inner.aux_layers

    @property
    def feature_layers(self):
        return self.inner.feature_layers

    def reset(self, capacity):
        self.inner.reset(capacity)

    def ingest(self, features, tokens):
        self.calls["ingest"] += 1
        self.inner.ingest(features, tokens)

    def propose(self, policy):
        self.calls["propose"] += 1
        tree = self.inner.propose(policy)
        if self.garble:
            tree.tokens[1:] = (tree.tokens[1:].astype(np.int64) * 7919 + 13) % 49152
        return tree

    def observe(self, accepted, drafted_depth):
        self.observed.append((accepted, drafted_depth))

    @property
    def length(self):
        return self.inner.length

    def truncate(self, n):
        self.inner.truncate(n)

    def fork(self):
        return Counting(self.inner.fork(), self.garble)


def bad_and_good(loaded) -> AutoProposer:
    """Auto over a garbling drafter, listed first (ties would pick it), and the real one."""
    bad = Counting(make_proposer("eagle3", "default", loaded), garble=True)
    good = Counting(make_proposer("eagle3", "default", loaded))
    return AutoProposer({"bad": bad, "good": good})


@pytest.mark.slow
@pytest.mark.parametrize("family", ["auto", "parallel"])
def test_greedy_output_is_plain_output(loaded, plain, family):
    model = model_with(loaded, make_proposer(family, BOTH, loaded))
    assert type(model.proposer).family == family and model.proposer.families == ["eagle3", "eagle3b"]
    for prompt in PROMPTS:
        want = plain.generate(prompt, chat=True, max_tokens=32)
        for tree in (None, "3,3,8"):
            got = model.generate(prompt, chat=True, max_tokens=32, tree=tree)
            assert got.tokens == want.tokens and got.text == want.text, (prompt, tree)
            assert got.metrics["num_drafts"] >= 1


@pytest.mark.slow
def test_parallel_over_a_bad_and_a_good_drafter(loaded, plain):
    """Merged trees of different tokens: still the plain output, the good drafter's nodes accepted."""
    bad = Counting(make_proposer("eagle3", "default", loaded), garble=True)
    model = model_with(loaded, ParallelProposer({"bad": bad, "good": make_proposer("eagle3", "default", loaded)}))
    want = plain.generate(PROMPTS[0], chat=True, max_tokens=32)
    got = model.generate(PROMPTS[0], chat=True, max_tokens=32, tree="2,3,8")
    assert got.tokens == want.tokens and got.metrics["num_accepted_tokens"] > 0
    assert bad.calls["propose"] == got.metrics["num_drafts"]


@pytest.mark.slow
def test_parallel_of_one_drafter_twice_drafts_that_drafters_tree(loaded):
    """Two copies of one drafter propose the same tree: the merge keeps each path once at its score."""
    one = make_proposer("eagle3", "default", loaded)
    both = make_proposer("parallel", BOTH, loaded)
    ids = loaded.tokenizer.encode("def reverse(items):\n    return")
    feats = len(one.feature_layers) * loaded.spec["hidden_size"]
    features = np.random.default_rng(0).standard_normal((len(ids) - 1, feats)).astype(np.float32)
    for p in (one, both):
        p.reset(256)
        p.ingest(features, np.array(ids[1:], np.int32))
    policy = TreePolicy(4, 4, 12)
    a, b = one.propose(policy), both.propose(policy)
    assert b.size == a.size == 12

    def node_paths(t):
        out = {0: ()}
        for i in range(1, t.size):
            out[i] = out[int(t.parents[i])] + (int(t.tokens[i]),)
        return {out[i]: float(t.scores[i]) for i in range(t.size)}

    assert node_paths(b) == pytest.approx(node_paths(a))


@pytest.mark.slow
def test_auto_drafts_with_the_better_family_and_ingests_only_into_it(loaded, plain):
    auto = bad_and_good(loaded)
    bad, good = auto.subs["bad"], auto.subs["good"]
    model = model_with(loaded, auto)
    # Prompts the real drafter drafts well from the start (on "Explain what a CPU cache is." its first rounds
    # all miss: a tie at 0 that goes to the first family until a re-probe).
    for prompt in (PROMPTS[0], PROMPTS[1]):
        before = {name: collections.Counter(p.calls) for name, p in auto.subs.items()}
        got = model.generate(prompt, chat=True, max_tokens=64, tree="chain:3")
        assert got.tokens == plain.generate(prompt, chat=True, max_tokens=64).tokens
        rounds = got.metrics["num_drafts"]
        n_bad, n_good = (auto.subs[n].calls["propose"] - before[n]["propose"] for n in ("bad", "good"))
        assert n_bad + n_good == rounds > FamilyChooser.FIRST_ROUNDS + FamilyChooser.PROBE_ROUNDS
        # The garbling drafter drafts the first rounds and then only now and then: most are the good one's.
        assert auto.chooser.best() == 1 and n_good > n_bad >= FamilyChooser.FIRST_ROUNDS
        # A family ingests once per round it drafts (its catch-up included), never while the other drafts.
        for name in ("bad", "good"):
            assert auto.subs[name].calls["ingest"] - before[name]["ingest"] == \
                auto.subs[name].calls["propose"] - before[name]["propose"]
    assert sum(a for a, _ in bad.observed) == 0 < sum(a for a, _ in good.observed)
    # Both hold the same pairs once the backlog is counted.
    assert bad.length + sum(len(t) for _, t in auto._backlog["bad"]) == good.length + sum(
        len(t) for _, t in auto._backlog["good"])


@pytest.mark.slow
def test_auto_sampling_depends_on_the_seed_alone(loaded):
    """The family choice starts over with each request and follows acceptance counts: the same seed
    gives the same tokens on a used proposer as on a fresh one."""
    used = model_with(loaded, bad_and_good(loaded))
    # Every round drafts (a fixed chain), so which family drafts changes the rounds' draws.
    kw = dict(chat=True, max_tokens=24, temperature=0.8, seed=3, tree="chain:3")
    first = used.generate(PROMPTS[0], **kw)
    again = used.generate(PROMPTS[0], **kw)
    fresh = model_with(loaded, bad_and_good(loaded)).generate(PROMPTS[0], **kw)
    assert first.tokens == again.tokens == fresh.tokens and first.metrics["num_accepted_tokens"] >= 1


@pytest.mark.slow
def test_load_and_generate_through_the_public_api(loaded, plain):
    model = api.load(drafter=BOTH, drafter_family="parallel", max_context=512)
    assert isinstance(model.proposer, ParallelProposer)
    want = plain.generate(PROMPTS[1], chat=True, max_tokens=16)
    assert model.generate(PROMPTS[1], chat=True, max_tokens=16).tokens == want.tokens


@pytest.mark.slow
@pytest.mark.parametrize("family", ["auto", "parallel"])
def test_cli_generate_with_a_combining_family(loaded, family):
    """With the drafters bundled for the default model (EAGLE-3 and Hydra): greedy output equal to plain."""
    args = [sys.executable, "-m", "eyas.cli", "generate", PROMPTS[0], "--chat", "--max-tokens", "16", "--json",
            "--threads", "1"]
    run = lambda *extra: subprocess.run([*args, *extra], capture_output=True, text=True, timeout=300)  # noqa: E731
    plain_out, out = run("--drafter", "none"), run("--drafter-family", family)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tokens"] == json.loads(plain_out.stdout)["tokens"]
    assert json.loads(out.stdout)["metrics"]["num_drafts"] >= 1


# ---- the server: one request, one drafter family -----------------------------------------------


@pytest.mark.slow
def test_a_request_pinned_to_a_family_drafts_with_it_alone(loaded, plain):
    import queue

    from eyas.server.engine import Engine, Request
    from tests.test_server_engine import collect, fresh

    auto = bad_and_good(loaded)
    model = model_with(loaded, auto)
    engine = Engine(model, max_concurrency=1, max_queue=8, tree="chain:2")  # every round drafts
    greedy = SamplingParams()
    ids = model.encode_prompt(PROMPTS[0], chat=True)
    want = fresh(plain, ids, greedy, 24)

    def serve(family, prompt_ids=ids):
        before = {name: p.calls["propose"] for name, p in auto.subs.items()}
        done = collect(engine, [Request(prompt_ids, greedy, 24, drafter_family=family)])[0]
        return done, {name: p.calls["propose"] - before[name] for name, p in auto.subs.items()}

    try:
        assert engine.drafter_families() == ["auto", "bad", "good", "none"]
        done, proposed = serve("bad")
        assert done["tokens"] == want and proposed == {"bad": done["speculative"]["num_drafts"], "good": 0}
        assert proposed["bad"] > 0
        done, proposed = serve("none")
        assert done["tokens"] == want and done["speculative"]["num_drafts"] == 0 and proposed == {"bad": 0, "good": 0}
        done, proposed = serve(None)  # the server's own proposer: auto over both
        assert done["tokens"] == want and proposed["bad"] > 0 and proposed["good"] > 0
        assert done["cached_tokens"] == 0  # auto's pairs are older than the plain request's history
        turn2 = ids + done["tokens"] + model.encode_prompt("Thanks!")
        done, _ = serve(None, turn2)  # the same proposer again: the prompt cache serves it
        assert done["cached_tokens"] > len(ids) and done["tokens"] == fresh(plain, turn2, greedy, 24)
        done, _ = serve("good", turn2)  # another proposer: its pairs are not this history's
        assert done["cached_tokens"] == 0 and done["tokens"] == fresh(plain, turn2, greedy, 24)
        errors = queue.Queue()
        engine.submit(Request(ids, greedy, 4, drafter_family="mtp"),
                      lambda kind, payload: kind == "error" and errors.put(payload))
        error = errors.get(timeout=60)
        assert isinstance(error, ValueError)
        assert str(error) == "[serve] drafter_family 'mtp': this server drafts with auto, bad, good, none"
        assert serve("good")[0]["tokens"] == want  # and the engine serves on
    finally:
        engine.shutdown()


@pytest.mark.slow
def test_the_http_api_takes_drafter_family_and_rejects_unknown_ones(loaded, plain):
    import httpx

    from eyas.server import Engine, create_app

    model = model_with(loaded, bad_and_good(loaded))
    engine = Engine(model, max_concurrency=2, max_queue=8)
    app = create_app(engine, model_id="m")
    body = {"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://eyas") as c:
            return [await c.post("/v1/completions", json={**body, **extra}) for extra in (
                {"drafter_family": "good"}, {"drafter_family": "none"}, {"drafter_family": "mtp"},
                {"drafter_family": 3})]

    try:
        good, none, unknown, wrong_type = asyncio.run(go())
    finally:
        engine.shutdown()
    want = plain.generate(body["prompt"], max_tokens=8).text
    assert good.status_code == none.status_code == 200
    assert good.json()["choices"][0]["text"] == none.json()["choices"][0]["text"] == want
    assert good.json()["speculative"]["num_drafts"] >= 1 and none.json()["speculative"]["num_drafts"] == 0
    assert unknown.status_code == wrong_type.status_code == 400
    error = unknown.json()["error"]
    assert error["param"] == "drafter_family"
    assert error["message"] == "drafter_family: this server drafts with 'auto', 'bad', 'good', 'none'; got 'mtp'"
