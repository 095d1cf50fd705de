"""Copied drafts (eyas.speculative.lookup): the n-gram index against a brute-force search, and the
generator's lookup rounds keeping greedy output identical, the drafter's pairs complete and in
order, sampled output on the target's distribution and a seed's output reproducible."""

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams
from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
from eyas.speculative import generator as generator_module
from eyas.speculative.lookup import PromptLookup, chain_tree
from tests.parity.cases_speculative import build, random_checkpoint
from tests.test_sampling import chi2, filtered_distribution
from tests.test_speculative_adaptive import Scripted, pairs_are_the_committed_sequence, run_recording_ingests
from tests.test_speculative_greedy import AUX, make_target, probe_logits, take


def brute_continuation(seq, k, sizes=PromptLookup.SIZES):
    """The longest suffix (of `sizes`) that occurred earlier: what followed its latest occurrence, and
    its length."""
    for n in sorted(sizes, reverse=True):
        if n > len(seq):
            continue
        suffix = seq[len(seq) - n :]
        for start in range(len(seq) - n - 1, -1, -1):
            if seq[start : start + n] == suffix:
                return seq[start + n : start + n + k], n
    return [], 0


def index_of(seq):
    lk = PromptLookup()
    lk.extend(seq)
    return lk


def test_continuation_prefers_the_longest_match_then_the_latest():
    assert index_of([1, 2, 3, 9, 1, 2]).continuation(3) == ([3, 9, 1], 2)
    # (7, 8)'s latest occurrence is followed by 1, but the 4-gram (5, 6, 7, 8) occurred too: its follower wins
    assert index_of([5, 6, 7, 8, 0, 7, 8, 1, 0, 5, 6, 7, 8]).continuation(2) == ([0, 7], 4)
    assert index_of([1, 2, 3, 1, 2, 4, 1, 2]).continuation(3) == ([4, 1, 2], 2)  # the latest of equal matches
    assert index_of([1, 2, 3, 1, 2]).continuation(9) == ([3, 1, 2], 2)  # runs up to the end, not past it
    assert index_of([4, 1, 2, 1]).continuation(3) == ([], 0)  # one shared token is not a match
    # 5 to 7 shared tokens count as a 4-token match; 8 as one of 8
    loop = [9, 1, 2, 3, 4, 5, 6, 7, 8]
    assert index_of(loop + [0] + loop[:7]).continuation(2) == ([7, 8], 4)
    assert index_of(loop + [0] + loop).continuation(2) == ([0, 9], 8)
    assert index_of([]).continuation(3) == ([], 0) and index_of([7]).continuation(3) == ([], 0)


def test_continuation_matches_a_brute_force_search_as_tokens_arrive():
    rng = np.random.default_rng(0)
    for vocab in (2, 3, 8):
        seq = rng.integers(0, vocab, 300).tolist()
        lk = PromptLookup()
        for i, t in enumerate(seq):
            lk.extend([t])
            for k in (1, 5):
                assert lk.continuation(k) == brute_continuation(seq[: i + 1], k), (vocab, i, k)
        assert index_of(np.array(seq, np.int32)).continuation(4) == brute_continuation(seq, 4)


def test_chain_tree():
    t = chain_tree(9, [4, 5])
    assert t.tokens.tolist() == [9, 4, 5] and t.parents.tolist() == [-1, 0, 1] and t.depths.tolist() == [0, 1, 2]
    assert t.mask.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]] and t.size == 3


def looping_setup(lazy=True):
    """A near-bigram target (its greedy output soon loops, so copies land) and a random drafter."""
    spec, core = make_target(mix=0.05)
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    drafter.lazy_logits = lazy
    return spec, core, drafter


@pytest.mark.parametrize("lazy", [True, False])
def test_lookup_rounds_keep_greedy_output_identical(lazy):
    spec, core, drafter = looping_setup(lazy)
    plain_t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    speculative_t = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    rng = np.random.default_rng(4)
    copied = 0
    for prompt in [rng.integers(0, 64, n).tolist() for n in (1, 9, 30)] + [[3, 4, 5, 6] * 6]:
        want = take(plain_steps(plain_t, prompt, SamplingParams()), 80)
        gen = SpeculativeGenerator(speculative_t, Eagle3Proposer(drafter), TreePolicy.auto(4))
        assert take(gen.steps(prompt, SamplingParams()), 80) == want
        assert np.array_equal(probe_logits(speculative_t, len(prompt) + 79).view(np.uint32),
                              probe_logits(plain_t, len(prompt) + 79).view(np.uint32))
        copied += gen.metrics()["num_lookup_accepted_tokens"]
    assert copied > 20, "the copies never landed: the test exercises nothing"


def test_nolookup_policy_drafts_no_copies():
    spec, core, drafter = looping_setup()
    target = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    prompt = [3, 4, 5, 6] * 6
    on = SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy.auto(4))
    a = take(on.steps(prompt, SamplingParams()), 60)
    off = SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy.parse("auto:4:nolookup"))
    assert take(off.steps(prompt, SamplingParams()), 60) == a
    assert on.metrics()["num_lookup_drafts"] > 0 and off.metrics()["num_lookup_drafts"] == 0


@pytest.mark.parametrize("lazy", [True, False])
def test_every_committed_pair_reaches_the_drafter_once_in_order_through_lookup_rounds(monkeypatch, lazy):
    """Lookup rounds skip the proposer, as plain steps do: before its next propose it ingests their
    pairs, so over a generation it sees exactly the committed sequence with the features a plain
    forward of it captures. Scripted depths mix copies, drafts and plain steps at known rounds."""
    spec, core, drafter = looping_setup(lazy)
    monkeypatch.setattr(generator_module, "DepthChooser", Scripted)
    gen, calls, seq = run_recording_ingests(spec, core, drafter, [5, 17, 2, 40, 5, 17], 100)
    assert gen.metrics()["num_lookup_drafts"] > 5
    assert len(calls) >= 2 and pairs_are_the_committed_sequence(spec, core, calls, seq) > 20


def test_sampled_lookup_rounds_depend_on_the_seed_alone():
    spec, core, drafter = looping_setup()
    target = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    plain = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    runs, metrics = [], []
    for seed in (11, 11, 12):
        sampling = SamplingParams(temperature=0.1, seed=seed)
        gen = SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy.auto(3))
        runs.append(take(gen.steps([4, 5, 6, 4, 5], sampling), 80))
        metrics.append({k: v for k, v in gen.metrics().items() if not k.endswith("_s")})
        assert runs[-1] == take(plain_steps(plain, [4, 5, 6, 4, 5], sampling), 80)  # plain decoding's draws
    assert runs[0] == runs[1] and runs[0] != runs[2] and metrics[0] == metrics[1]
    assert metrics[0]["num_lookup_accepted_tokens"] > 0


def test_a_sampled_lookup_round_draws_from_the_target_distribution():
    """The prompt holds x followed by every token, so whatever the first token t1, the first round
    drafts a copy (x). The round's token t2 must still follow the target: its counts over many seeds
    against the exact marginal sum_t1 p(t1 | P) p(t2 | P, t1)."""
    spec, core, drafter = looping_setup()
    temperature, x = 0.7, 7
    prompt = [tok for t in range(64) for tok in (x, t)] + [x]
    ref = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    first = ref.forward(np.array(prompt, np.int32), logits="last")["logits"][-1]
    p1 = filtered_distribution(first, temperature)
    ref.commit(np.arange(len(prompt), dtype=np.int32))
    exact = np.zeros(64)
    for t1 in np.flatnonzero(p1 > 1e-9):
        ref.truncate(len(prompt))
        row = ref.forward(np.array([t1], np.int32), logits="last")["logits"][-1]
        exact += p1[t1] * filtered_distribution(row, temperature)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=drafter.aux_layers)
    proposer = Eagle3Proposer(drafter)
    counts, copied = np.zeros(64), 0
    n = 3000
    for seed in range(n):
        gen = SpeculativeGenerator(target, proposer, TreePolicy.auto(1))
        t2 = take(gen.steps(prompt, SamplingParams(temperature=temperature, seed=seed)), 2)[1]
        counts[t2] += 1
        copied += gen.metrics()["num_lookup_drafts"]
    assert copied == n, "every first round should draft the copy"
    keep = exact * n >= 5  # pool the rare tokens into one cell
    stat, df = chi2(np.append(counts[keep], counts[~keep].sum()), np.append(exact[keep], exact[~keep].sum()))
    limit = df + 6 * np.sqrt(2 * df)
    assert stat < limit, f"chi2 {stat:.1f} >= {limit:.1f} (df {df})"


# ---- the "lookup" family: copies only, for targets with no drafter ---------------------------------


def test_the_lookup_family_keeps_greedy_output_identical_without_a_drafter():
    from eyas.speculative.proposers.lookup import LookupProposer

    spec, core = make_target(mix=0.05)
    plain_t = _core.Transformer(spec, core, max_context=256)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=[])  # nothing to capture
    copied = 0
    for prompt in ([3, 4, 5, 6] * 6, [9, 1, 2]):
        want = take(plain_steps(plain_t, prompt, SamplingParams()), 80)
        gen = SpeculativeGenerator(target, LookupProposer(), None)
        assert take(gen.steps(prompt, SamplingParams()), 80) == want
        m = gen.metrics()
        # Every drafted token is a copy (tokens against tokens: a copy round may draft several, as the
        # measured chooser decides, which made a rounds-against-tokens check fail now and then).
        assert m["num_lookup_draft_tokens"] == m["num_draft_tokens"]
        copied += m["num_lookup_accepted_tokens"]
    assert copied > 20
    runs = [take(SpeculativeGenerator(target, LookupProposer(), None).steps(
        [3, 4, 5, 6] * 6, SamplingParams(temperature=0.1, seed=s)), 60) for s in (5, 5, 6)]
    assert runs[0] == runs[1] != runs[2]


def test_the_lookup_family_drafts_only_copies():
    from eyas.speculative.proposers.lookup import LookupProposer

    spec, core = make_target()
    target = _core.Transformer(spec, core, max_context=64, aux_layers=[])
    for tree in ("chain:3", "2,3,6", "auto:nolookup"):
        with pytest.raises(ValueError, match=r"\[speculative\] the 'lookup' family has no drafter"):
            SpeculativeGenerator(target, LookupProposer(), tree)
    with pytest.raises(ValueError, match=r"\[speculative\] the lookup family has no drafter"):
        LookupProposer().propose(TreePolicy.chain(2))


def test_default_drafter_falls_back_to_copies_when_none_is_bundled():
    import types

    from eyas.speculative import make_proposer
    from eyas.speculative.proposers.lookup import LookupProposer

    spec, core = make_target()
    tiny = types.SimpleNamespace(spec=spec, weights=core)  # no bundled drafter has its vocabulary
    assert isinstance(make_proposer("eagle3", "default", tiny), LookupProposer)
    assert isinstance(make_proposer("lookup", "default", tiny), LookupProposer)
    assert make_proposer("eagle3", "none", tiny) is None
    with pytest.raises(ValueError, match=r"\[speculative\] the lookup family takes no drafter checkpoint"):
        make_proposer("lookup", "some/folder", tiny)


def test_the_lookup_family_keeps_a_cached_prompt():
    """It holds no per-pair state, so prompt caching keeps as much as it does for plain decoding."""
    from eyas.generation import stream
    from eyas.speculative.generator import kept_positions
    from eyas.speculative.proposers.lookup import LookupProposer

    spec, core = make_target(mix=0.05)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=[])
    prompt = [3, 4, 5, 6] * 6
    first = take(stream(target, prompt, SamplingParams(), proposer=LookupProposer()), 30)
    assert kept_positions(target, LookupProposer(), len(prompt)) == len(prompt) - 1
    again = take(stream(target, prompt, SamplingParams(), proposer=LookupProposer(), cached=len(prompt) - 1), 30)
    assert again == first
