"""The draft floor (TreePolicy.min_prob): nodes under it are dropped from any proposer's tree but for its
likeliest first token, and the output stays plain decoding's."""

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams
from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
from eyas.speculative.rounds import DraftTree, drop_unlikely
from tests.parity.cases_speculative import build, random_checkpoint
from tests.test_speculative_greedy import AUX, make_target, take


def tree(parents, scores):
    n = len(parents)
    mask = np.eye(n, dtype=np.uint8)
    for i in range(1, n):
        mask[i] |= mask[parents[i]]
    depths = mask.sum(1).astype(np.int32) - 1
    return DraftTree(np.arange(100, 100 + n, dtype=np.int32), np.array(parents, np.int32), depths, mask,
                     np.array(scores, np.float32))


def test_drop_unlikely_keeps_the_likely_subtree():
    # root -> 1 (.6) -> 3 (.3) -> 5 (.1); root -> 2 (.2) -> 4 (.05)
    t = tree([-1, 0, 0, 1, 2, 3], np.log([1, 0.6, 0.2, 0.3, 0.05, 0.1]))
    out = drop_unlikely(t, np.log(0.15))
    assert out.tokens.tolist() == [100, 101, 102, 103]
    assert out.parents.tolist() == [-1, 0, 0, 1]
    assert out.depths.tolist() == [0, 1, 1, 2]
    assert out.mask.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 1]]
    assert drop_unlikely(t, -np.inf) is t
    assert drop_unlikely(t, np.log(0.9)).tokens.tolist() == [100, 101]  # the root and the likeliest first token
    t2 = tree([-1, 0, 0], np.log([1, 0.2, 0.3]))
    assert drop_unlikely(t2, np.log(0.5)).tokens.tolist() == [100, 102]


def test_drop_unlikely_refuses_scores_that_rise_along_a_path():
    t = tree([-1, 0, 0, 2], np.log([1, 0.4, 0.1, 0.5]))
    with pytest.raises(ValueError, match=r"\[speculative\].*rise"):
        drop_unlikely(t, np.log(0.3))


class IgnoresFloor(Eagle3Proposer):
    """A proposer that drafts every node whatever the policy's floor, as a third-party one might."""

    def propose(self, policy):
        return super().propose(TreePolicy(policy.top_k, policy.depth, policy.total_tokens, policy.adaptive))


@pytest.mark.parametrize("proposer_cls", [Eagle3Proposer, IgnoresFloor])
def test_a_floor_above_every_draft_verifies_one_token_a_round(proposer_cls):
    spec, core = make_target()
    cfg, t = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, t)
    prompt = [3, 1, 4, 1, 5]
    want = take(plain_steps(_core.Transformer(spec, core, max_context=128, aux_layers=AUX), prompt, SamplingParams()), 30)
    target = _core.Transformer(spec, core, max_context=128, aux_layers=AUX + [spec["num_layers"]])
    for min_prob, per_round in ((0.999, 1), (0.0, 3)):
        gen = SpeculativeGenerator(target, proposer_cls(drafter), TreePolicy.chain(3, min_prob=min_prob))
        assert take(gen.steps(prompt, SamplingParams()), 30) == want
        m = gen.metrics()
        assert m["num_drafts"] > 0 and m["num_draft_tokens"] == per_round * m["num_drafts"], m
