"""Invariant 2 (DESIGN §3): greedy speculative output is bit-identical to plain greedy output, for
random drafters (low acceptance) and a drafter fit to the target (high acceptance), over many
prompts and tree shapes; after generation the target's KV holds exactly the plain run's rows."""

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams
from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
from tests.parity.cases_speculative import build, random_checkpoint, tiny_target

LAYERS = 8
AUX = [2, LAYERS // 2, LAYERS - 3]
# The floors (min_prob) cut a random drafter's low-probability drafts, often down to one token a round.
POLICIES = [TreePolicy(1, 1, 2), TreePolicy.chain(4), TreePolicy(2, 3, 6), TreePolicy(4, 5, 16), TreePolicy(8, 6, 32),
            TreePolicy.auto(4), TreePolicy.auto(4, min_prob=0.2), TreePolicy.chain(4, min_prob=0.3),
            TreePolicy(4, 5, 16, min_prob=0.02)]


def make_target(seed=3, mix=1.0, tie=False):
    """Tiny llama target; `mix` scales every layer's attention/FFN output (small = near-bigram model)."""
    spec, core, _ = tiny_target(seed, layers=LAYERS, vocab=64, tie=tie)
    for name in list(core):
        if name.endswith(("attn_output", "ffn_down")):
            arr, dt, shape = core[name]
            core[name] = ((arr * mix).astype(np.float32), dt, shape)
    return spec, core


def take(steps, n):
    out = []
    for toks in steps:
        out += toks
        if len(out) >= n:
            steps.close()
            return out[:n]


def probe_logits(target, length):
    """Logits of a fixed probe token after the first `length` committed tokens."""
    target.truncate(length)
    return target.forward(np.array([5], np.int32), logits="last")["logits"]


def check_equal(spec, core, drafter, prompts, policies, n_tokens, lazy=True):
    """lazy: the target also captures its final state, so accept computes logits per visited node."""
    plain_t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    speculative_t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX + [LAYERS] if lazy else AUX)
    accepted = 0
    for prompt in prompts:
        want = take(plain_steps(plain_t, prompt, SamplingParams()), n_tokens)
        want_probe = probe_logits(plain_t, len(prompt) + n_tokens - 1)
        for policy in policies:
            gen = SpeculativeGenerator(speculative_t, Eagle3Proposer(drafter), policy)
            assert gen.lazy == lazy
            got = take(gen.steps(prompt, SamplingParams()), n_tokens)
            assert got == want, f"policy {policy}: speculative output differs from plain greedy"
            assert np.array_equal(probe_logits(speculative_t, len(prompt) + n_tokens - 1).view(np.uint32),
                                  want_probe.view(np.uint32)), f"policy {policy}: KV rows differ"
            accepted += gen.metrics()["num_accepted_tokens"]
    return accepted


@pytest.mark.parametrize("lazy", [True, False])
def test_random_drafter_matches_plain_greedy(lazy):
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    assert drafter.aux_layers == AUX
    drafter.lazy_logits = True
    assert drafter.aux_layers == AUX + [LAYERS]
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, 64, n).tolist() for n in (1, 3, 17, 40)]
    check_equal(spec, core, drafter, prompts, POLICIES, 40, lazy)


def test_perfectly_predictable_target_full_acceptance():
    """A target whose output ignores its input (all-zero final norm: every logit 0, argmax 0) and a drafter
    that always proposes token 0: every drafted token is accepted."""
    spec, core = make_target()
    H = spec["hidden_size"]
    core["output_norm"] = (np.zeros(H, np.float32), 0, [H])
    cfg, t = random_checkpoint(2, spec)
    t["lm_head.weight"][:] = 0.0
    t["d2t"][:] = 0
    drafter = build(spec, core, cfg, t)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    for policy in (TreePolicy.chain(5), TreePolicy.chain(1), TreePolicy(1, 3, 32)):
        gen = SpeculativeGenerator(target, Eagle3Proposer(drafter), policy)
        out = take(gen.steps([1, 2, 3], SamplingParams()), 61)
        m = gen.metrics()
        assert out == [0] * 61
        assert m["mean_accepted_length"] == policy.depth + 1
        assert m["accepted_per_pos"] == [m["num_drafts"]] * policy.depth


def test_sampling_is_seeded():
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    runs = []
    for seed in (7, 7, 8):
        sampling = SamplingParams(temperature=5.0, top_p=0.95, seed=seed)
        runs.append(take(SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy(3, 3, 8)).steps([4, 5, 6], sampling), 30))
    assert runs[0] == runs[1] and runs[0] != runs[2]


@pytest.mark.parametrize("params", [dict(temperature=2.0), dict(temperature=0.8, top_p=0.9), dict(temperature=1.5, top_k=10)])
def test_sampled_speculative_output_is_plain_sampled_output(params):
    """Accept draws the target's token with the uniform plain decoding spends on it and follows a
    child holding it, so a seed gives the same tokens with or without speculation, any tree."""
    spec, core = make_target(mix=0.3)
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    plain_t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    speculative_t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX + [LAYERS])
    accepted = 0
    for seed, prompt in [(1, [4, 5, 6]), (2, [9, 1, 30, 2])]:
        sampling = SamplingParams(seed=seed, **params)
        want = take(plain_steps(plain_t, prompt, sampling), 40)
        for policy in POLICIES:
            gen = SpeculativeGenerator(speculative_t, Eagle3Proposer(drafter), policy)
            assert take(gen.steps(prompt, sampling), 40) == want, f"policy {policy}, seed {seed}"
            accepted += gen.metrics()["num_accepted_tokens"]
    assert accepted > 0  # drafted tokens were accepted, not only bonus tokens emitted


def test_aux_layer_mismatch_is_an_error():
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec)
    drafter = build(spec, core, cfg, t)
    target = _core.Transformer(spec, core, max_context=64, aux_layers=[1, 2, 3])
    with pytest.raises(ValueError, match=r"\[speculative\].*aux layers"):
        SpeculativeGenerator(target, Eagle3Proposer(drafter))


def test_context_end_falls_back_to_plain_steps():
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    prompt = [1, 2, 3, 4]
    want = take(plain_steps(_core.Transformer(spec, core, max_context=24, aux_layers=AUX), prompt, SamplingParams()), 20)
    target = _core.Transformer(spec, core, max_context=24, aux_layers=AUX)
    got = take(SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy(4, 5, 16)).steps(prompt, SamplingParams()), 20)
    assert got == want and target.length == 23  # prompt + 19 fed tokens: the last rounds ran plain steps
