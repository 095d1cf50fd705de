"""Plain prefill and decode of a hybrid (Gated DeltaNet) target update the recurrent state in place
(`prefill`, `decode`, `forward(commit_all=True)`: forward + commit in one call). The bits equal
forward-then-commit's, a working copy of the state is allocated only by a forward that may be committed
in part, and the prefill checkpoint is held only while `prefill_checkpoints` is on."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from eyas import _core  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from tests.fixtures import tiny_qwen35  # noqa: E402

i32 = np.int32


# dense_v64: value heads wide enough for the AVX-512 chain kernel, which then runs the prefill in place
@pytest.fixture(scope="module", params=["dense", "dense_v64"])
def loaded(tmp_path_factory, request):
    path = tmp_path_factory.mktemp("q35inplace") / request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_hf(request.param, path)
    return load_model(path)


DEVICE = _core.Device("cpu", 1)  # one for all: forward_batch runs sequences built on the same device


def _target(m, chunk=256):
    return _core.Transformer(m.spec, m.weights, max_context=64, chunk=chunk, device=DEVICE)


def _gdn_states(t) -> list[np.ndarray]:
    out = []
    for i, kind in enumerate(t.layer_kinds):
        if kind == "gdn":
            out += [v.view(np.uint32) for v in t.layer_state(i).values()]
    return out


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("chunk", [256, 4])  # 4: the 10-row prefill runs three chunks in place
def test_in_place_prefill_and_decode_equal_forward_then_commit(loaded, chunk):
    ids = np.random.default_rng(1).integers(0, tiny_qwen35.VOCAB, 15).astype(i32)
    a, b = _target(loaded, chunk), _target(loaded, chunk)
    got = [a.prefill(ids[:10], logits="all")["logits"]]
    want = [b.forward(ids[:10], logits="all")["logits"]]
    b.commit(np.arange(10, dtype=i32))
    for tok in ids[10:]:
        got.append(a.decode(int(tok))["logits"])
        want.append(b.forward(np.array([tok], i32))["logits"])
        b.commit([0])
        assert a.length == b.length
    assert all(np.array_equal(_bits(g), _bits(w)) for g, w in zip(got, want))
    sa, sb = _gdn_states(a), _gdn_states(b)
    assert len(sa) == 4 and all(np.array_equal(x, y) for x, y in zip(sa, sb))


def test_a_working_copy_only_for_a_forward_that_may_be_committed_in_part(loaded):
    t = _target(loaded)
    one_copy = t.state_bytes  # at length 0: the recurrent layers' committed state only
    start = t.held_state_bytes
    t.prefill(np.arange(12, dtype=i32), logits="none")
    t.decode(5, logits="none")
    assert t.held_state_bytes - start < one_copy // 4  # no second copy (a few row indices at most)
    t.forward(np.array([3], i32), logits="none")  # uncommitted: runs into a working copy
    grown = t.held_state_bytes - start
    assert grown >= one_copy
    t.commit([0])
    t.prefill_checkpoints = True
    t.prefill(np.arange(3, dtype=i32), logits="none")
    assert t.held_state_bytes - start >= grown + one_copy  # the checkpoint
    t.prefill_checkpoints = False
    assert t.held_state_bytes - start < grown + one_copy // 4


def test_forward_batch_commit_all_equals_each_sequences_own_decode(loaded):
    rng = np.random.default_rng(2)
    prompts = [rng.integers(0, tiny_qwen35.VOCAB, n).astype(i32) for n in (6, 9)]
    batch, solo = [_target(loaded) for _ in prompts], [_target(loaded) for _ in prompts]
    for t, u, p in zip(batch, solo, prompts):
        t.prefill(p, logits="none"), u.prefill(p, logits="none")
    toks = [7, 11]
    out = batch[0].forward_batch([{"target": t, "tokens": np.array([k], i32), "commit_all": True}
                                  for t, k in zip(batch, toks)])
    for t, u, k, o in zip(batch, solo, toks, out):
        want = u.decode(k)["logits"]
        assert np.array_equal(_bits(o["logits"]), _bits(want))
        assert t.length == u.length and t.pending == 0
        assert all(np.array_equal(x, y) for x, y in zip(_gdn_states(t), _gdn_states(u)))


def test_commit_all_refuses_a_tree_and_loses_nothing(loaded):
    t = _target(loaded)
    t.prefill(np.arange(5, dtype=i32), logits="none")
    before = _gdn_states(t)
    with pytest.raises(ValueError, match=r"commit_all needs a causal forward"):
        t.forward(np.array([1, 2], i32), parents=[-1, 0], commit_all=True)
    assert t.length == 5 and all(np.array_equal(x, y) for x, y in zip(before, _gdn_states(t)))


def test_a_verified_chain_and_its_commit_equal_decoding_one_token_at_a_time(loaded):
    # a chain of drafts as a tree (parents): with 64-wide value heads the AVX-512 chain kernel runs it
    ids = np.random.default_rng(3).integers(0, tiny_qwen35.VOCAB, 12).astype(i32)
    t, u = _target(loaded), _target(loaded)
    t.prefill(ids[:8], logits="none"), u.prefill(ids[:8], logits="none")
    tree = t.forward(ids[8:], parents=[-1, 0, 1, 2], logits="all")["logits"]
    plain = [u.decode(int(k))["logits"][0] for k in ids[8:]]
    assert all(np.array_equal(_bits(tree[j]), _bits(plain[j])) for j in range(4))
    t.commit([0, 1])
    w = _target(loaded)
    w.prefill(ids[:8], logits="none")
    for k in ids[8:10]:
        w.decode(int(k), logits="none")
    assert all(np.array_equal(x, y) for x, y in zip(_gdn_states(t), _gdn_states(w)))
