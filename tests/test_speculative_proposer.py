"""The Proposer seam: any registered family drives the generator, which never asks which one it runs.
An oracle proposing the target's own greedy continuation is fully accepted; a random one still
gives output identical to plain greedy; the registry and `drafter_family` reject unknown names."""

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams
from eyas.speculative import SpeculativeGenerator, TreePolicy, families, make_proposer, register_proposer
from eyas.speculative import proposer as proposer_module
from eyas.speculative.proposer import Proposer
from eyas.speculative.rounds import DraftTree
from tests.test_speculative_greedy import AUX, make_target, take


def tree_from(tokens, parents) -> DraftTree:
    """A DraftTree from node tokens and parents (root first, parents before children)."""
    n = len(tokens)
    depths, mask = np.zeros(n, np.int32), np.zeros((n, n), np.uint8)
    for i in range(n):
        if i:
            depths[i] = depths[parents[i]] + 1
            mask[i] = mask[parents[i]]
        mask[i, i] = 1
    return DraftTree(np.array(tokens, np.int32), np.array(parents, np.int32), depths, mask)


class Oracle(Proposer):
    """Proposes the next `depth` tokens of a known sequence as a chain."""

    family = "oracle"
    aux_layers = feature_layers = AUX
    hidden = 64  # the target's hidden size

    def __init__(self, sequence):
        self.sequence = list(sequence)
        self.ingested = []

    def reset(self, capacity):
        self.ingested = []

    def ingest(self, features, tokens):
        assert features.shape == (len(tokens), len(self.feature_layers) * self.hidden)
        assert features.dtype == np.float32 and tokens.dtype == np.int32
        self.ingested += tokens.tolist()

    def propose(self, policy):
        n = len(self.ingested)  # the last ingested token is sequence[n] (ingested tokens start at sequence[1])
        chain = self.sequence[n : n + policy.depth + 1]
        return tree_from(chain, [-1] + list(range(len(chain) - 1)))


class Random(Oracle):
    """Proposes random trees of the policy's size: useless drafts, never wrong output."""

    family = "random"

    def __init__(self, seed=0, vocab=64):
        super().__init__([])
        self.rng, self.vocab = np.random.default_rng(seed), vocab

    def propose(self, policy):
        n = policy.total_tokens
        parents = [-1] + [int(self.rng.integers(0, i)) for i in range(1, n)]
        return tree_from([self.ingested[-1]] + self.rng.integers(0, self.vocab, n - 1).tolist(), parents)


def register_family(monkeypatch, name, cls=None, seed=2, made=None):
    """Registers `name` for this test: its factory builds cls (default Random) over the loaded
    target's vocabulary, reading aux layers [0, 1]; each (drafter, proposer) goes to `made`."""
    from eyas.speculative import proposer as proposer_module

    def factory(drafter, loaded):
        p = (cls or Random)(seed=seed, vocab=loaded.spec["vocab_size"])
        p.aux_layers = p.feature_layers = [0, 1]
        p.hidden = loaded.spec["hidden_size"]
        if made is not None:
            made.append((drafter, p))
        return p

    monkeypatch.setitem(proposer_module._FACTORIES, name, factory)


@pytest.fixture(scope="module")
def target():
    spec, core = make_target()
    return _core.Transformer(spec, core, max_context=256, aux_layers=AUX)


def plain_greedy(target, prompt, n):
    return take(plain_steps(target, prompt, SamplingParams()), n)


@pytest.mark.parametrize("policy", [TreePolicy.chain(1), TreePolicy.chain(4)])
def test_oracle_is_fully_accepted(target, policy):
    prompt = [3, 14, 15, 9]
    want = plain_greedy(target, prompt, 41)
    gen = SpeculativeGenerator(target, Oracle(prompt + want), policy)
    got = take(gen.steps(prompt, SamplingParams()), 41)
    assert got == want
    m = gen.metrics()
    assert m["num_drafts"] == 40 // (policy.depth + 1)
    assert m["num_accepted_tokens"] == m["num_draft_tokens"] == policy.depth * m["num_drafts"]
    assert m["mean_accepted_length"] == policy.depth + 1


@pytest.mark.parametrize("policy", [TreePolicy.chain(3), TreePolicy(3, 3, 8), TreePolicy.auto(3)])
def test_random_proposer_keeps_plain_greedy_output(target, policy):
    for seed, prompt in enumerate(([1], [7, 7, 7, 7, 7], list(range(20)))):
        want = plain_greedy(target, prompt, 30)
        gen = SpeculativeGenerator(target, Random(seed), policy)
        assert take(gen.steps(prompt, SamplingParams()), 30) == want


def test_generator_uses_the_proposers_recommended_policy(target):
    p = Random()
    p.policy = TreePolicy(2, 2, 4)
    assert SpeculativeGenerator(target, p).policy == TreePolicy(2, 2, 4)
    assert SpeculativeGenerator(target, p, TreePolicy.chain(1)).policy == TreePolicy.chain(1)
    assert SpeculativeGenerator(target, Random()).policy == TreePolicy.auto()


def test_registry(monkeypatch):
    monkeypatch.setitem(proposer_module._FACTORIES, "random", lambda drafter, target, seed=0: Random(seed))
    names = families()
    # Sorted registered families (the built-ins and this test's), then "none" last.
    assert names[-1] == "none" and names[:-1] == sorted(names[:-1])
    assert {"eagle3", "hass", "hydra", "mtp", "random"} <= set(names)
    assert isinstance(make_proposer("random", "anything", None, seed=3), Random)
    assert make_proposer("random", "none", None) is None and make_proposer("none", "default", None) is None
    with pytest.raises(ValueError, match=r"\[speculative\] unknown drafter family 'medusa'; choose one of "
                                         + ", ".join(names)):
        make_proposer("medusa", "default", None)
    for bad in ("none", "", None):
        with pytest.raises(ValueError, match=r"\[speculative\] cannot register"):
            register_proposer(bad, Random)


def test_proposer_is_abstract():
    with pytest.raises(TypeError):
        Proposer()
