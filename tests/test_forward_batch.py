"""Transformer.forward_batch (continuous batching): several sequences' rows in one forward give each
sequence exactly the bits of its own forward() (logits, argmax, aux), leave each KV cache as its own
forward would, and bad batches fail clearly without touching any sequence."""

import numpy as np
import pytest
from eyas import _core
from tests.test_transformer_reference import make_model, random_tree
from tests.test_transformer_invariance import AUX, MODELS

BATCHABLE = list(MODELS)  # every attention-only architecture of the invariance suite (hybrids below)


def sequences(name, n, threads=2, chunk=256):
    """n Transformers over one model's weights (each its own KV cache), as Model.fork() makes them."""
    spec, core, _ = make_model(11, **MODELS[name])
    dev = _core.Device("cpu", threads)
    return spec, [_core.Transformer(spec, core, max_context=96, aux_layers=AUX, device=dev, chunk=chunk)
                  for _ in range(n)]


def same_bits(a, b, what):
    assert a.shape == b.shape, what
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"{what}: not bit-identical"


def mixed_round(rng, V, i):
    """One sequence's input of a serving round: a decode step, a tree verify or a short chain."""
    kind = ["decode", "tree", "chain"][i % 3]
    if kind == "decode":
        return dict(tokens=rng.integers(0, V, 1).astype(np.int32), logits="argmax", capture_aux=True)
    T = int(rng.integers(2, 7))
    tokens = rng.integers(0, V, T).astype(np.int32)
    if kind == "chain":
        return dict(tokens=tokens, logits="last", capture_aux=False)
    _, depths, mask = random_tree(rng, T)
    return dict(tokens=tokens, mask=mask, depths=depths, logits="all", capture_aux=True)


def rounds_equal_alone(batch, alone, V, rng, keep_of, steps=4):
    """Serving rounds of mixed items: the batch's result for each sequence has the bits of that sequence's
    own forward (on its twin in `alone`); then both commit keep_of(item)."""
    for step in range(steps):
        items = [mixed_round(rng, V, i + step) for i in range(len(batch))]
        got = batch[0].forward_batch([dict(it, target=t) for it, t in zip(items, batch)])
        for i, (it, t, res) in enumerate(zip(items, alone, got)):
            want = t.forward(it["tokens"], mask=it.get("mask"), depths=it.get("depths"), logits=it["logits"],
                             capture_aux=it["capture_aux"])
            assert sorted(res) == sorted(want), f"sequence {i}: result keys"
            for key in want:
                if key == "argmax":
                    assert res[key] == want[key], f"step {step} sequence {i}: argmax"
                else:
                    same_bits(res[key], want[key], f"step {step} sequence {i}: {key}")
        for t_batch, t_alone, it in zip(batch, alone, items):
            keep = keep_of(it)
            t_batch.commit(keep)
            t_alone.commit(keep)


@pytest.mark.parametrize("name", BATCHABLE)
def test_batch_rows_equal_each_sequence_alone(name):
    rng = np.random.default_rng(3)
    spec, batch = sequences(name, 4)
    _, alone = sequences(name, 4)
    V = spec["vocab_size"]
    prompts = [rng.integers(0, V, n).astype(np.int32) for n in (5, 9, 1, 14)]
    for a, b, p in zip(batch, alone, prompts):  # different lengths: different prefixes per sequence
        a.prefill(p)
        b.prefill(p)
    # commit a path: the first rows of each
    rounds_equal_alone(batch, alone, V, rng, lambda it: list(range(1 if "mask" in it else len(it["tokens"]))))
    for i, (a, b) in enumerate(zip(batch, alone)):  # the caches held the same rows: the next step agrees
        assert a.length == b.length
        x = a.forward(np.array([3], np.int32), logits="all")["logits"]
        same_bits(x, b.forward(np.array([3], np.int32), logits="all")["logits"], f"sequence {i} after the rounds")


def test_a_batch_of_one_is_a_plain_forward():
    rng = np.random.default_rng(4)
    spec, (a, b) = sequences("llama-q4_1", 2, threads=1)
    p = rng.integers(0, spec["vocab_size"], 7).astype(np.int32)
    a.prefill(p)
    b.prefill(p)
    _, depths, mask = random_tree(rng, 5)
    tokens = rng.integers(0, spec["vocab_size"], 5).astype(np.int32)
    (got,) = a.forward_batch([dict(target=a, tokens=tokens, mask=mask, depths=depths, logits="all")])
    same_bits(got["logits"], b.forward(tokens, mask=mask, depths=depths, logits="all")["logits"], "logits")


def test_bad_batches_fail_clearly_and_leave_sequences_untouched():
    rng = np.random.default_rng(5)
    spec, (a, b) = sequences("llama-q8", 2, threads=1, chunk=16)
    _, (other,) = sequences("llama-q4_1", 1, threads=1)
    V = spec["vocab_size"]
    a.prefill(rng.integers(0, V, 4).astype(np.int32))
    one = np.array([1], np.int32)
    cases = [
        ([dict(target=a, tokens=one), dict(target=a, tokens=one)], "appears twice"),
        ([dict(target=a, tokens=one), dict(target=other, tokens=one)], "same weights|this model"),
        ([dict(target=a, tokens=np.array([V], np.int32))], "outside"),
        ([dict(target=a, tokens=one, logits="maybe")], "logits must be"),
        ([dict(tokens=one)], "target"),
        ([dict(target=a, tokens=one, colour="red")], "unknown item key"),
        ([], "at least one"),
        ([dict(target=a, tokens=rng.integers(0, V, 10).astype(np.int32)),
          dict(target=b, tokens=rng.integers(0, V, 10).astype(np.int32))], "chunk"),
    ]
    for items, msg in cases:
        with pytest.raises(ValueError, match=msg):
            a.forward_batch(items)
    assert a.length == 4 and b.length == 0
    assert a.pending == 0 and b.pending == 0


@pytest.fixture(scope="module", params=["dense", "moe", "next"])
def hybrid(request, tmp_path_factory):
    """A tiny Qwen3.5 (dense, MoE) or Qwen3-Next checkpoint, loaded: Gated DeltaNet layers keep a
    recurrent state per sequence."""
    import warnings

    from eyas.loaders import load_model
    from tests.fixtures import tiny_qwen35

    folder = tmp_path_factory.mktemp(f"qwen35-{request.param}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_hf(request.param, folder)
    return load_model(folder)


def test_hybrid_batch_rows_equal_each_sequence_alone(hybrid):
    """Gated DeltaNet layers in a batch: each sequence's recurrence runs from its own conv and recurrent
    state, so decode rows, trees and chains beside other sequences give their own forward's bits, and a
    committed tree path (replayed from the kept update inputs) leaves the state its own forward would."""
    m = hybrid
    rng = np.random.default_rng(6)
    dev = _core.Device("cpu", 2)
    make = lambda: _core.Transformer(m.spec, m.weights, max_context=64, aux_layers=[1], device=dev)
    batch, alone = [make() for _ in range(4)], [make() for _ in range(4)]
    V = m.spec["vocab_size"]
    for a, b, n in zip(batch, alone, (5, 9, 1, 14)):
        p = rng.integers(0, V, n).astype(np.int32)
        a.prefill(p)
        b.prefill(p)
    # a tree keeps a root-to-node path (two nodes when node 1 is a child of the root), a chain every row
    rounds_equal_alone(batch, alone, V, rng, lambda it: ([0, 1] if it["depths"][1] == 1 else [0]) if "mask" in it
                       else list(range(len(it["tokens"]))))
    for i, (a, b) in enumerate(zip(batch, alone)):
        gdn = [k for k, kind in enumerate(a.layer_kinds) if kind == "gdn"]
        assert gdn
        for k in gdn:
            mine, theirs = a.layer_state(k), b.layer_state(k)
            for name in ("conv", "recurrent"):
                same_bits(mine[name], theirs[name], f"sequence {i}: layer {k} {name} state after the rounds")
        x = a.forward(np.array([3], np.int32), logits="all")["logits"]
        same_bits(x, b.forward(np.array([3], np.int32), logits="all")["logits"], f"sequence {i} after the rounds")


def test_batcher_groups_threads_and_isolates_a_bad_request():
    """ForwardBatcher (eyas serve's continuous batching): forwards from several threads run as one
    batch; a request that fails gets its own error while the others get their bits."""
    import threading

    from eyas.server.batching import BatchedTarget, ForwardBatcher

    rng = np.random.default_rng(6)
    spec, seqs = sequences("llama-q4_1", 4, threads=1)
    _, alone = sequences("llama-q4_1", 4, threads=1)
    V = spec["vocab_size"]
    for a, b in zip(seqs, alone):
        p = rng.integers(0, V, 6).astype(np.int32)
        a.prefill(p)
        b.prefill(p)
    tokens = [rng.integers(0, V, 3).astype(np.int32) for _ in seqs]
    tokens[2] = np.array([V + 5], np.int32)  # out of range: fails alone
    batcher = ForwardBatcher(seqs[0], wait_s=5.0)  # only a full round starts a batch
    results = [None] * 4
    barrier = threading.Barrier(4)

    def run(i):
        batcher.join()
        barrier.wait()
        try:
            results[i] = BatchedTarget(seqs[i], batcher).forward(tokens[i], logits="all")
        except ValueError as e:
            results[i] = e
        finally:
            batcher.leave()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert batcher.batches == 1 and batcher.widest == 4
    assert isinstance(results[2], ValueError) and "outside" in str(results[2])
    for i in (0, 1, 3):
        same_bits(results[i]["logits"], alone[i].forward(tokens[i], logits="all")["logits"], f"request {i}")
