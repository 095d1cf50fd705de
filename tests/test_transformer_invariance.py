"""Bit-exact invariants of _core.Transformer (DESIGN §3): a token's logits and aux features are the
same bits whether it runs as a plain decode, in a chunked prefill, or inside a verified tree, at any
thread count; commit() moves the accepted rows byte for byte."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from eyas import _core
from tests.test_transformer_reference import MOE, make_model, random_tree

AUX = [0, 1, 3]
MODELS = {
    "llama-q8": dict(qtype=Q.Q8_0),
    "llama-q4_1": dict(qtype=Q.Q4_1, embd_qtype=Q.Q8_0),
    "qwen3-gated-f32": dict(arch="qwen3", qk_norm=True, gated=True, qkv_bias=True),
    "qwen3_moe-q8": dict(arch="qwen3_moe", moe=MOE, qtype=Q.Q8_0),
}


def build(name, threads=1, chunk=256, seed=11):
    spec, core, _ = make_model(seed, **MODELS[name])
    dev = _core.Device("cpu", threads)
    return spec, _core.Transformer(spec, core, max_context=96, aux_layers=AUX, device=dev, chunk=chunk)


def plain_decode(m, tokens):
    """Decode one token at a time; returns per-token logits [T, V] and aux [T, A*H]."""
    logits, aux = [], []
    for t in tokens:
        out = m.forward(np.array([t], dtype=np.int32), logits="all", capture_aux=True)
        m.commit([0])
        logits.append(out["logits"][0])
        aux.append(out["aux"][0])
    return np.stack(logits), np.stack(aux)


def same_bits(a, b, what):
    assert a.shape == b.shape, what
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"{what}: not bit-identical"


@pytest.mark.parametrize("name", list(MODELS))
def test_decode_prefill_and_trees_agree(name):
    rng = np.random.default_rng(7)
    spec, m = build(name)
    V = spec["vocab_size"]
    seq = rng.integers(0, V, 24).astype(np.int32)
    ref_logits, ref_aux = plain_decode(m, seq)

    # Chunked prefill (chunk 5) and unchunked prefill give the same rows as decode.
    for chunk in (5, 256):
        _, p = build(name, chunk=chunk)
        out = p.forward(seq, logits="all", capture_aux=True)
        same_bits(out["logits"], ref_logits, f"prefill chunk={chunk} logits")
        same_bits(out["aux"], ref_aux, f"prefill chunk={chunk} aux")
        last = p.forward(seq, logits="last")["logits"]
        same_bits(last, ref_logits[-1:], "prefill last-row logits")

    # Trees after a committed prefix of 8: the chain through a chosen path sees exactly what
    # plain decoding saw, so its rows must match bit for bit; other nodes are random tokens.
    n = 8
    for trial in range(4):
        _, t = build(name, chunk=[256, 3][trial % 2])
        t.prefill(seq[:n])
        T = [1, 6, 13, 20][trial]
        parents, depths, mask = random_tree(rng, T)
        leaf = int(np.argmax(depths))
        path = [leaf]
        while parents[path[-1]] >= 0:
            path.append(int(parents[path[-1]]))
        path = path[::-1]
        toks = rng.integers(0, V, T).astype(np.int32)
        toks[path] = seq[n:n + len(path)]
        out = t.forward(toks, mask=mask, depths=depths, logits="all", capture_aux=True)
        same_bits(out["logits"][path], ref_logits[n:n + len(path)], f"tree {T} logits")
        same_bits(out["aux"][path], ref_aux[n:n + len(path)], f"tree {T} aux")
        # Accept the path; the next decode continues exactly like the plain run.
        t.commit(np.array(path, dtype=np.int32))
        assert t.length == n + len(path)
        k = n + len(path)
        nxt = t.forward(seq[k:k + 1], logits="all", capture_aux=True)
        same_bits(nxt["logits"][0], ref_logits[k], "decode after commit")
        same_bits(nxt["aux"][0], ref_aux[k], "aux after commit")

    # A chain tree is the same as a plain forward over the same tokens.
    _, c = build(name)
    c.prefill(seq[:n])
    chain = np.tril(np.ones((6, 6), dtype=np.uint8))
    out = c.forward(seq[n:n + 6], mask=chain, depths=np.arange(6, dtype=np.int32), logits="all")
    same_bits(out["logits"], ref_logits[n:n + 6], "chain tree")


@pytest.mark.parametrize("name", ["llama-q8", "qwen3_moe-q8"])
def test_thread_count_does_not_change_bits(name):
    rng = np.random.default_rng(3)
    seq = rng.integers(0, 128, 30).astype(np.int32)
    _, depths, mask = random_tree(rng, 17)
    tree = rng.integers(0, 128, 17).astype(np.int32)
    outs = []
    for threads in (1, 2):
        _, m = build(name, threads=threads, chunk=7)
        prefill = m.forward(seq, logits="all", capture_aux=True)
        m.commit(np.arange(30))
        outs.append((prefill, m.forward(tree, mask=mask, depths=depths, logits="all", capture_aux=True)))
    for i, what in enumerate(("prefill", "tree")):
        same_bits(outs[0][i]["logits"], outs[1][i]["logits"], f"{what} logits 1 vs 2 threads")
        same_bits(outs[0][i]["aux"], outs[1][i]["aux"], f"{what} aux 1 vs 2 threads")


def test_commit_truncate_and_reset():
    spec, m = build("llama-q8")
    seq = np.random.default_rng(9).integers(0, 128, 12).astype(np.int32)
    ref, _ = plain_decode(m, seq)
    assert m.length == 12
    # Truncate back to 5 and redo: identical rows (the old slots are simply overwritten).
    m.truncate(5)
    assert m.length == 5
    again = m.forward(seq[5:], logits="all")["logits"]
    assert np.array_equal(again, ref[5:])
    assert m.length == 5  # forward never commits
    m.commit(np.arange(7))
    assert m.length == 12
    # Commit a non-contiguous subset: rows 0 and 2 of a forward over [a, junk, b] keep a and b.
    m.truncate(5)
    junk = (seq[6] + 1) % 128
    mask = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=np.uint8)
    m.forward(np.array([seq[5], junk, seq[6]], dtype=np.int32), mask=mask, depths=np.array([0, 1, 1], np.int32))
    m.commit(np.array([0, 2], dtype=np.int32))
    assert m.length == 7
    nxt = m.forward(seq[7:8], logits="all")["logits"]
    assert np.array_equal(nxt[0], ref[7])
    m.reset()
    assert m.length == 0 and m.capacity == 96
    first = m.decode(int(seq[0]), logits="all")["logits"]
    assert np.array_equal(first[0], ref[0])
    assert m.length == 1


@pytest.mark.parametrize("name", list(MODELS))
def test_fused_weights_give_the_same_bits(name):
    """fuse=True concatenates q|k|v and gate|up into one matmul each; every row must be unchanged."""
    spec, core, _ = make_model(5, **MODELS[name])
    seq = np.random.default_rng(4).integers(0, 128, 11).astype(np.int32)
    outs = []
    for fuse in (True, False):
        m = _core.Transformer(spec, core, max_context=32, aux_layers=AUX, fuse=fuse)
        prefill = m.forward(seq, logits="all", capture_aux=True)
        m.commit(np.arange(10))  # keep 10, then decode the 11th as T=1 (the view path)
        dec = m.forward(seq[10:], logits="all", capture_aux=True)
        outs.append((prefill, dec))
    for key in ("logits", "aux"):
        same_bits(outs[0][0][key], outs[1][0][key], f"prefill {key} fused vs unfused")
        same_bits(outs[0][1][key], outs[1][1][key], f"decode {key} fused vs unfused")


@pytest.mark.parametrize("name", ["llama-q4_1", "qwen3-gated-f32"])
def test_argmax_mode_matches_last_logits(name):
    # logits="argmax" returns the first maximum of the last row's logits, the rule spec accept uses;
    # it must agree with logits="last" for prefill and for every decode step, at any thread count.
    rng = np.random.default_rng(3)
    spec, m = build(name)
    _, m2 = build(name, threads=2)
    V = spec["vocab_size"]
    seq = rng.integers(0, V, 12).astype(np.int32)
    for model in (m, m2):
        model.reset()
        out = model.forward(seq, logits="argmax")
        assert set(out) == {"argmax"}
        m.reset()
        want = m.forward(seq, logits="last")["logits"][0]
        assert out["argmax"] == int(np.argmax(want))
    for model in (m, m2):
        model.reset()
        model.prefill(seq[:4])
    for t in seq[4:]:
        lo = m.forward(np.array([t], np.int32), logits="last")["logits"][0]
        am = m2.forward(np.array([t], np.int32), logits="argmax")["argmax"]
        m.commit([0]), m2.commit([0])
        assert am == int(np.argmax(lo))
    with pytest.raises(ValueError, match=r"\[forward\] logits must be 'last', 'all', 'none', 'argmax' or 'argmax_all'"):
        m.forward(seq[:1], logits="max")


@pytest.mark.parametrize("name", list(MODELS))
def test_argmax_all_mode_matches_every_rows_logits(name):
    # logits="argmax_all" (a greedy verify) gives every row's first maximum: for a tree, for a causal
    # forward over several chunks, and for each sequence of a forward_batch.
    rng = np.random.default_rng(4)
    spec, m = build(name)
    _, small = build(name, chunk=4)
    V = spec["vocab_size"]
    seq = rng.integers(0, V, 10).astype(np.int32)
    for model in (m, small):
        model.reset()
        model.prefill(seq[:6], logits="none")
    _, depths, mask = random_tree(rng, 7)
    toks = rng.integers(0, V, 7).astype(np.int32)
    want = m.forward(toks, mask=mask, depths=depths, logits="all")["logits"].argmax(-1)
    got = m.forward(toks, mask=mask, depths=depths, logits="argmax_all")
    assert set(got) == {"argmaxes"} and got["argmaxes"].tolist() == want.tolist()
    small.reset()
    want = small.forward(seq, logits="all")["logits"].argmax(-1)
    small.reset()
    assert small.forward(seq, logits="argmax_all")["argmaxes"].tolist() == want.tolist()  # 3 chunks of 4
    spec, core, _ = make_model(11, **MODELS[name])
    dev = _core.Device("cpu", 1)
    a, b, solo = (_core.Transformer(spec, core, max_context=96, aux_layers=AUX, device=dev) for _ in range(3))
    items = [{"target": a, "tokens": seq[:3], "logits": "argmax_all"}, {"target": b, "tokens": seq[3:8], "logits": "argmax_all"}]
    out = a.forward_batch(items)
    for it, o in zip(items, out):
        solo.reset()
        assert o["argmaxes"].tolist() == solo.forward(it["tokens"], logits="all")["logits"].argmax(-1).tolist()
