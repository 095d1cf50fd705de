"""Tree verify over recurrent (Gated DeltaNet) state: every node starts from its parent's conv window and
delta-rule state, so a tree row has the bits of plain decoding along its root-to-node path; commit keeps
the accepted path's state (replayed with the forward's kernel), and greedy speculative decoding with a
random drafter stays bit-identical to plain decoding on a Qwen3.5 hybrid target."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from eyas import _core  # noqa: E402
from eyas.generation import plain_steps  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402
from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy  # noqa: E402
from tests.fixtures import tiny_qwen35  # noqa: E402
from tests.parity.cases_speculative import build, random_checkpoint  # noqa: E402
from tests.test_speculative_greedy import take as _take  # noqa: E402

# Two roots, siblings, 4 levels; node 9 hangs under 5 (a sibling subtree's grandchild).
PARENTS = [-1, 0, 0, 1, 1, 2, 3, -1, 7, 5, 9, 6]
i32 = np.int32


@pytest.fixture(scope="module", params=["dense", "moe", "next"])
def built(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("q35tree") / request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tiny_qwen35.make_hf(request.param, folder)
    m = load_model(folder)
    return {"model": model, "folder": folder, "spec": m.spec, "weights": m.weights}


def _target(built, **kw):
    return _core.Transformer(built["spec"], built["weights"], max_context=kw.pop("max_context", 96),
                             device=_core.Device("cpu", kw.pop("threads", 1)), **kw)


def _path(i):
    out = []
    while i >= 0:
        out.append(i)
        i = PARENTS[i]
    return out[::-1]


def _plain(t, prefix, path_tokens):
    """Logits of plain decoding: prefill the prefix, then one token at a time."""
    t.reset()
    t.forward(np.asarray(prefix, i32), logits="none")
    t.commit(np.arange(len(prefix), dtype=i32))
    rows = []
    for tok in path_tokens:
        rows.append(np.asarray(t.forward(np.array([tok], i32), logits="last")["logits"])[0])
        t.commit(np.zeros(1, i32))
    return np.stack(rows)


def _tree_case(seed, prefix_len):
    rng = np.random.default_rng(seed)
    return rng.integers(0, tiny_qwen35.VOCAB, prefix_len).tolist(), rng.integers(0, tiny_qwen35.VOCAB, len(PARENTS))


@pytest.mark.parametrize("prefix_len", [1, 6])
@pytest.mark.parametrize("threads", [1, 2])
def test_tree_rows_equal_plain_decoding_of_each_path(built, prefix_len, threads):
    prefix, toks = _tree_case(prefix_len, prefix_len)
    t = _target(built, threads=threads)
    t.forward(np.asarray(prefix, i32), logits="none")
    t.commit(np.arange(prefix_len, dtype=i32))
    tree = np.asarray(t.forward(toks.astype(i32), parents=np.array(PARENTS, i32), logits="all")["logits"])
    # The same tree as a visibility mask (the speculative rounds' form): the parents come from the mask.
    mask = np.zeros((len(PARENTS), len(PARENTS)), np.uint8)
    for i in range(len(PARENTS)):
        mask[i, _path(i)] = 1
    by_mask = np.asarray(t.forward(toks.astype(i32), mask=mask, logits="all")["logits"])
    assert np.array_equal(by_mask.view(np.uint32), tree.view(np.uint32))
    plain = _target(built)
    for i in range(len(PARENTS)):
        path = _path(i)
        want = _plain(plain, prefix, toks[path])[-1]
        assert np.array_equal(tree[i].view(np.uint32), want.view(np.uint32)), f"node {i} (path {path})"
        # And transformers on prefix + path from scratch.
        hf = tiny_qwen35.hf_logits(built["model"], list(prefix) + toks[path].tolist())[-1]
        np.testing.assert_allclose(tree[i], hf, rtol=1e-4, atol=2e-4)


@pytest.mark.parametrize("leaf", [0, 4, 8, 10, 11])
def test_commit_of_a_path_continues_like_plain_decoding(built, leaf):
    prefix, toks = _tree_case(leaf, 5)
    path = _path(leaf)
    t = _target(built)
    t.forward(np.asarray(prefix, i32), logits="none")
    t.commit(np.arange(len(prefix), dtype=i32))
    t.forward(toks.astype(i32), parents=np.array(PARENTS, i32), logits="all")
    t.commit(np.array(path, i32))
    assert t.length == len(prefix) + len(path)
    after = np.array([7, 11, 3], i32)
    got = []
    for tok in after:
        got.append(np.asarray(t.forward(np.array([tok], i32), logits="last")["logits"])[0])
        t.commit(np.zeros(1, i32))
    want = _plain(_target(built), prefix, np.concatenate([toks[path], after]))[len(path):]
    assert np.array_equal(np.stack(got).view(np.uint32), want.view(np.uint32))


def test_partial_commit_of_a_causal_forward_replays(built):
    """A chain verified causally (parents i-1) and accepted only in part: the replay keeps that prefix."""
    prefix, toks = _tree_case(3, 4)
    t = _target(built)
    t.forward(np.asarray(prefix + toks[:6].tolist(), i32), logits="none")
    t.commit(np.arange(len(prefix) + 2, dtype=i32))
    t.forward(np.array([9], i32), logits="none")
    t.commit(np.zeros(1, i32))
    got = np.asarray(t.forward(np.array([4], i32), logits="last")["logits"])[0]
    want = _plain(_target(built), prefix, np.concatenate([toks[:2], [9, 4]]))[-1]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_partial_commit_of_a_chunked_causal_forward_replays(built):
    """A causal forward split into chunks keeps every row's update inputs (up to GdnState::kKeepRows)."""
    prefix, toks = _tree_case(4, 3)
    t = _target(built, chunk=4)
    t.forward(np.asarray(prefix, i32), logits="none")
    t.commit(np.arange(len(prefix), dtype=i32))
    t.forward(toks[:11].astype(i32), logits="none")  # 3 chunks
    t.commit(np.arange(6, dtype=i32))
    got = np.asarray(t.forward(np.array([4], i32), logits="last")["logits"])[0]
    want = _plain(_target(built), prefix, np.concatenate([toks[:6], [4]]))[-1]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_long_causal_forward_can_only_be_committed_whole(built):
    t = _target(built, max_context=128)
    t.forward(np.zeros(65, i32), logits="none")  # past GdnState::kKeepRows
    with pytest.raises(ValueError, match=r"^\[commit\] a recurrent \(gdn\) layer keeps the update inputs of trees "
                                         r"and of causal forwards of up to 64 rows: commit all 65 rows"):
        t.commit(np.arange(10, dtype=i32))
    t.commit(np.arange(65, dtype=i32))
    assert t.length == 65


def test_a_tree_longer_than_a_chunk_is_refused(built):
    t = _target(built, chunk=4)
    with pytest.raises(ValueError, match=r"^\[forward\] a tree over recurrent \(gdn\) layers must fit in one chunk"):
        t.forward(np.zeros(len(PARENTS), i32), parents=np.array(PARENTS, i32), logits="all")
    t.forward(np.zeros(3, i32), parents=np.array([-1, 0, 0], i32), logits="all")  # fits: fine


def test_greedy_speculative_equals_plain_with_a_random_drafter(built):
    spec, core = built["spec"], built["weights"]
    cfg, tensors = random_checkpoint(1, spec, draft_vocab=48)
    drafter = build(spec, core, cfg, tensors)
    aux = drafter.aux_layers
    plain_t = _core.Transformer(spec, core, max_context=128, aux_layers=aux)
    spec_t = _core.Transformer(spec, core, max_context=128, aux_layers=aux)
    rng = np.random.default_rng(0)
    for prompt in (rng.integers(0, tiny_qwen35.VOCAB, n).tolist() for n in (1, 9)):
        want = _take(plain_steps(plain_t, prompt, SamplingParams()), 30)
        for policy in (TreePolicy.chain(3), TreePolicy(2, 3, 6), TreePolicy(4, 4, 12)):
            gen = SpeculativeGenerator(spec_t, Eagle3Proposer(drafter), policy)
            assert _take(gen.steps(prompt, SamplingParams()), 30) == want, f"policy {policy}"



@pytest.mark.parametrize("source", ["hf", "gguf"])
def test_public_api_with_an_eagle3_drafter_on_a_qwen35_target(built, tmp_path, source):
    """eyas.load: a Qwen3.5 target (HF folder or GGUF) with an EAGLE-3 drafter checkpoint fit to its
    hidden size and vocab; chat generation with the default chain and a tree equals plain decoding."""
    import eyas
    from tests.parity.cases_speculative import write_checkpoint

    path = built["folder"] if source == "hf" else tiny_qwen35.write_gguf(tmp_path / "t.gguf", built["model"])
    cfg, tensors = random_checkpoint(2, built["spec"], draft_vocab=64)
    drafter = write_checkpoint(tmp_path / "drafter", cfg, tensors)
    model = eyas.load(path, drafter=str(drafter), max_context=128)
    assert model.proposer is not None
    proposer = model.proposer
    try:
        model.proposer = None
        want = model.generate("hello there", chat=True, max_tokens=20)
    finally:
        model.proposer = proposer
    for tree in (None, "2,3,6"):
        got = model.generate("hello there", chat=True, max_tokens=20, **({"tree": tree} if tree else {}))
        assert got.tokens == want.tokens
        assert got.metrics["num_drafts"] >= 1
