"""Lossless sampling on a hybrid (Gated DeltaNet) target: speculative rounds whose trees are verified over
recurrent state and partly accepted emit the target's own distribution. Over many seeds, the first three
tokens of seeded speculative generation (the prefill's draw, then tokens accepted from a tree or drawn
from its residual) follow the exact joint distribution of plain sampling, computed from the target's
probabilities (chi-square, as test_accept's toy-target test does for the accept walk alone)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from eyas import _core  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402
from eyas.speculative import Proposer, SpeculativeGenerator, TreePolicy  # noqa: E402
from eyas.speculative.rounds import DraftTree  # noqa: E402
from tests.fixtures import tiny_qwen35  # noqa: E402
from tests.test_sampling import chi2  # noqa: E402
from tests.test_speculative_greedy import take  # noqa: E402

i32 = np.int32
PROMPT = [5, 17, 42, 8]
KW = dict(temperature=2.0, top_k=3, top_p=1.0)
N_TOKENS = 3
# Root, the target's best and second-best next tokens, and the best token after each of them.
PARENTS = np.array([-1, 0, 0, 1, 2], i32)


class TargetGuess(Proposer):
    """Drafts with a copy of the target: the tree above, built from greedy ranks, so its nodes are both
    accepted and rejected under sampling."""

    family = "target-guess"
    aux_layers = feature_layers = []

    def __init__(self, spec, weights):
        self.t = _core.Transformer(spec, weights, max_context=64, aux_layers=[])
        self.context: list[int] = []

    def reset(self, capacity):
        self.context = PROMPT[:1]

    def ingest(self, features, tokens):
        self.context += [int(x) for x in tokens]

    def _ranked(self, ctx):
        self.t.reset()
        return np.argsort(-np.asarray(self.t.prefill(np.asarray(ctx, i32))["logits"])[-1], kind="stable")

    def propose(self, policy):
        first = self._ranked(self.context)[:2]
        tokens = [self.context[-1], *first] + [int(self._ranked(self.context + [int(x)])[0]) for x in first]
        mask = np.zeros((5, 5), np.uint8)
        for i, p in enumerate(PARENTS):
            mask[i] = mask[p] if p >= 0 else 0
            mask[i, i] = 1
        return DraftTree(np.asarray(tokens, i32), PARENTS.copy(), mask.sum(1).astype(i32) - 1, mask)


@pytest.fixture(scope="module", params=["dense", "next"])
def loaded(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("q35samp") / request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_hf(request.param, folder)
    return load_model(folder)


def _exact_joint(t, temperature):
    """{token sequence: probability} of plain sampling's first N_TOKENS tokens under KW at `temperature`."""
    out = {(): 1.0}
    for _ in range(N_TOKENS):
        nxt = {}
        for seq, p in out.items():
            t.reset()
            logits = np.asarray(t.prefill(np.asarray(PROMPT + list(seq), i32))["logits"])[-1]
            probs = _core.speculative.target_probs(logits, temperature=temperature, top_k=KW["top_k"],
                                                   top_p=KW["top_p"])
            for x in np.flatnonzero(probs):
                nxt[seq + (int(x),)] = p * float(probs[x])
        out = nxt
    return out


def test_speculative_sampling_follows_the_hybrid_targets_distribution(loaded):
    target = _core.Transformer(loaded.spec, loaded.weights, max_context=64, aux_layers=[])
    proposer = TargetGuess(loaded.spec, loaded.weights)
    joint = _exact_joint(target, KW["temperature"])
    cells = sorted(joint)
    probs = np.array([joint[c] for c in cells])
    counts = np.zeros(len(cells))
    accepted = np.zeros(2, int)  # trials that accepted no drafted token, and some (both paths of accept)
    n = 1500
    for seed in range(n):
        gen = SpeculativeGenerator(target, proposer, TreePolicy(2, 2, 5))
        seq = tuple(take(gen.steps(PROMPT, SamplingParams(**KW, seed=seed)), N_TOKENS))
        assert seq in joint, f"seed {seed}: {seq} is outside the top-k support"
        counts[cells.index(seq)] += 1
        accepted[min(gen.stats.num_accepted_tokens, 1)] += 1
    assert accepted.min() > n // 30, f"trials accepting none / some drafts: {accepted} (both must be common)"
    stat, df = chi2(counts, probs)
    limit = df + 6 * np.sqrt(2 * df)  # ~1e-6 false-failure rate
    assert stat < limit, f"chi2 {stat:.1f} >= {limit:.1f} (df {df})"
    # The statistic has the power to reject a neighbouring distribution (half the temperature).
    other = _exact_joint(target, KW["temperature"] / 2)
    assert chi2(counts, np.array([other.get(c, 0.0) for c in cells]))[0] > 3 * limit
