"""Drafter training (eyas.train) on a tiny random Llama GGUF, CPU only, a few seconds.

Covers: torch target (cache/padding consistency), TTT training lowers the loss, export -> reload
round trip and file layout, exported weights vs a numpy forward of reference §3, the batched
tree simulation vs a node-by-node EAGLE-2 reference, and the draft-vocab maps.
"""

import json
import math
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")
gguf = pytest.importorskip("gguf")

from eyas.train.dataset import Sequences, choose_draft_vocab  # noqa: E402
from eyas.train.drafter import DrafterConfig, Eagle3Drafter, unrolled_attention, unrolled_attention_reference  # noqa: E402,E501
from eyas.train.evaluate import draft_trees, evaluate_sequences, replay  # noqa: E402
from eyas.train.export import load_drafter, save_drafter  # noqa: E402
from eyas.train.generate import generate_batch, graph_friendly  # noqa: E402
from eyas.train.target import TorchTarget, group_mask, grouped_attention  # noqa: E402
from eyas.train.trainer import TrainArgs, collate, make_batches, target_signals, train, ttt_loss  # noqa: E402

V, H, FF, L, NH, NKV = 96, 64, 128, 8, 4, 2
HD = H // NH


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "tiny.gguf"
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(L)
    w.add_embedding_length(H)
    w.add_feed_forward_length(FF)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_rope_dimension_count(HD)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    # A placeholder vocabulary: the engine's loader wants a tokenizer; ids are all that is used.
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<s>", "<pad>", "</s>", "a", "b", "ab"] + [f"<t{i}>" for i in range(6, V)])
    w.add_token_types([3 if i < 3 else 1 for i in range(V)])
    w.add_token_merges(["a b"])
    f = lambda *s: (rng.standard_normal(s) * (1.0 / math.sqrt(s[-1]))).astype(np.float32)  # noqa: E731
    # Embedding rows scaled up so the tiny model is confident (its greedy text is learnable).
    w.add_tensor("token_embd.weight", f(V, H) * 4)
    for i in range(L):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(H, np.float32))
        w.add_tensor(p + "attn_q.weight", f(H, H))
        w.add_tensor(p + "attn_k.weight", f(NKV * HD, H))
        w.add_tensor(p + "attn_v.weight", f(NKV * HD, H))
        w.add_tensor(p + "attn_output.weight", f(H, H))
        w.add_tensor(p + "ffn_norm.weight", np.ones(H, np.float32))
        w.add_tensor(p + "ffn_gate.weight", f(FF, H))
        w.add_tensor(p + "ffn_up.weight", f(FF, H))
        w.add_tensor(p + "ffn_down.weight", f(H, FF))
    w.add_tensor("output_norm.weight", np.ones(H, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def target(tiny_gguf):
    torch.manual_seed(0)
    return TorchTarget.load(tiny_gguf).eval()


@pytest.fixture(scope="module")
def data(target):
    rng = np.random.default_rng(1)
    prompts = [list(rng.integers(3, V, size=int(rng.integers(4, 9)))) for _ in range(48)]
    resp = generate_batch(target, prompts, 24)
    return Sequences.from_lists(prompts, resp)


def _drafter(target, data, vd=64):
    c = target.cfg
    used, _ = choose_draft_vocab(data.assistant_counts(V), vd)
    cfg = DrafterConfig(vocab_size=V, draft_vocab_size=vd, hidden_size=H, intermediate_size=FF, num_heads=NH,
                        num_kv_heads=NKV, head_dim=HD, target_hidden_size=H, rope_theta=c.rope_theta,
                        aux_layers=c.aux_layers)
    torch.manual_seed(0)
    d = Eagle3Drafter(cfg, target.embed)
    d.set_vocab(torch.as_tensor(used))
    return d


def test_target_cache_and_padding_match_full_forward(target, data):
    # Cached, left-padded generation must equal argmax of one full forward over the result.
    for i in range(3):
        s = torch.as_tensor(data.seq(i), dtype=torch.long)[None]
        final, aux = target(s)
        am = target.logits(final)[0].argmax(-1)
        P = int(data.prompt_lens[i])
        assert torch.equal(am[P - 1:-1], s[0, P:]), i
    assert aux.shape == (1, s.shape[1], 3 * H)
    assert target.cfg.aux_layers == [2, L // 2, L - 3]


def test_chunked_prefill_matches_one_pass(target):
    # Long prompts are prefilled in chunks through the cache; greedy output must not change.
    rng = np.random.default_rng(2)
    prompts = [list(rng.integers(3, V, size=int(rng.integers(5, 21)))) for _ in range(6)]
    one = generate_batch(target, prompts, 12, prefill_chunk=64)
    assert generate_batch(target, prompts, 12, prefill_chunk=4) == one
    assert generate_batch(target, prompts, 12, prefill_chunk=1) == one


def test_static_decode_steps_match_eager(target):
    # The decode step a CUDA graph replays (slot on the device, attention over the whole masked cache)
    # draws the same tokens as the eager step, greedy and sampled, left padding included.
    rng = np.random.default_rng(3)
    prompts = [list(rng.integers(3, V, size=int(rng.integers(3, 15)))) for _ in range(5)]
    for temps in (None, [0.0, 0.8, 0.8, 0.0, 1.0]):
        eager = generate_batch(target, prompts, 16, temps, seed=4, static=False)
        assert generate_batch(target, prompts, 16, temps, seed=4, static=True) == eager


@pytest.mark.parametrize("B,Hq,Hkv,T,S", [(3, 9, 3, 1, 37), (2, 8, 2, 5, 21), (2, 4, 4, 6, 6)])
def test_grouped_attention_equals_sdpa_gqa(B, Hq, Hkv, T, S):
    # Query heads folded into their kv head's rows: SDPA's own GQA over the same mask (left padding,
    # causal in slots), row for row.
    g = torch.Generator().manual_seed(B * 100 + T)
    q, k, v = (torch.randn(B, h, n, 16, generator=g) for h, n in ((Hq, T), (Hkv, S), (Hkv, S)))
    keys = torch.rand(B, S, generator=g) > 0.3
    keys[:, S - T:] = True
    mask = (torch.arange(S)[None] <= torch.arange(T)[:, None] + S - T)[None, None] & keys[:, None, None, :]
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=Hq != Hkv)
    got = grouped_attention(q, k, v, group_mask(mask, Hq // Hkv))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_unrolled_attention_equals_the_written_out_pattern(steps):
    g = torch.Generator().manual_seed(steps)
    T = 11
    causal = torch.arange(T)[None, :] <= torch.arange(T)[:, None]
    leaves = [torch.randn(2, 4, T, 8, generator=g, requires_grad=True) for _ in range(1 + 2 * steps)]
    q, keys, vals = leaves[0], leaves[1:1 + steps], leaves[1 + steps:]
    got = unrolled_attention(q, keys, vals, causal)
    want = unrolled_attention_reference(q, keys, vals, causal)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    w = torch.randn(got.shape, generator=g)
    grads_got = torch.autograd.grad((got * w).sum(), leaves)
    grads_want = torch.autograd.grad((want * w).sum(), leaves)
    for a, b in zip(grads_got, grads_want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_graph_friendly_targets(target):
    # Captured decode steps only where a step never waits for the host: not with recurrent layers
    # (state carried in Python) nor MoE FFNs (experts picked on the host).
    assert graph_friendly(target)
    for mixers, ffns in ((["attention", "gdn"], ["dense_ffn"] * 2), (["attention"], ["moe_ffn"])):
        assert not graph_friendly(types.SimpleNamespace(mixers=mixers, ffn_kinds=ffns))


def test_static_cache_pos_takes_one_token(target):
    kv = tuple(torch.zeros(L, 1, NKV, 8, HD) for _ in range(2))
    with pytest.raises(ValueError, match="one token"):
        target(torch.tensor([[3, 4]]), key_mask=torch.ones(1, 8, dtype=torch.bool), kv=kv,
               cache_pos=torch.tensor(0), want_aux=False)


def test_draft_vocab_maps(target, data):
    counts = data.assistant_counts(V)
    used, cov = choose_draft_vocab(counts, 40)
    assert np.all(np.diff(used) > 0) and 0 < cov <= 1
    d = _drafter(target, data, vd=40)
    assert torch.equal(d.draft_ids().numpy() if False else d.draft_ids(), torch.as_tensor(used))
    assert bool((d.d2t[1:] >= d.d2t[:-1]).all()) and int(d.d2t.min()) >= 0
    assert int(d.t2d.sum()) == 40 and bool(d.t2d[torch.as_tensor(used)].all())
    with pytest.raises(ValueError, match=r"\[train\]"):
        choose_draft_vocab(counts, V + 1)


def ttt_loss_now(target, d, ids, lm, args):
    """The drafter's training-time-test loss terms on a fixed batch, without gradients."""
    with torch.no_grad():
        aux, p, mask = target_signals(target, d, ids, lm)
        return ttt_loss(d, aux, ids, p, mask, args)[1]


@pytest.mark.parametrize("hass", [False, True])
def test_training_lowers_loss(tmp_path, target, data, hass):
    d = _drafter(target, data)
    args = TrainArgs(steps_ttt=3, lr=3e-3, epochs=8, tokens_per_batch=512, max_len=64, hass=hass,
                     ckpt_every=1000, log_every=1000)
    ids, lm = collate(data, list(range(16)), torch.device("cpu"))
    before = ttt_loss_now(target, d, ids, lm, args)
    steps = train(target, d, data, str(tmp_path), args, torch.device("cpu"), log=lambda m: None)
    after = ttt_loss_now(target, d, ids, lm, args)
    assert after[0] < 0.85 * before[0], (before, after)
    assert (tmp_path / "ckpt.pt").exists()
    # Resume: a fresh drafter picks up the finished run's weights and trains no further.
    fresh = _drafter(target, data)
    logs = []
    assert train(target, fresh, data, str(tmp_path), args, torch.device("cpu"), log=logs.append) == steps
    assert any("resumed" in m for m in logs)
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), d.state_dict().values()))


def test_training_log_records(tmp_path, target, data):
    """Each log record names its step and losses; the allocator fields appear on CUDA only."""
    args = TrainArgs(steps_ttt=2, epochs=1, tokens_per_batch=256, max_len=64, ckpt_every=1000, log_every=1)
    logs = []
    train(target, _drafter(target, data), data, str(tmp_path), args, torch.device("cpu"), log=logs.append)
    records = [json.loads(m) for m in logs if m.startswith("{")]
    assert records and [r["step"] for r in records] == list(range(1, len(records) + 1))
    assert all(set(r) == {"step", "of", "min", "lr", "loss0", "acc"} and len(r["acc"]) == 2 for r in records)


def test_export_roundtrip_and_layout(tmp_path, target, data):
    from safetensors.numpy import load_file

    d = _drafter(target, data)
    save_drafter(d, tmp_path, "float32", extra={"note": "test"})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLMEagle3"] and cfg["draft_vocab_size"] == 64
    assert cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    t = load_file(str(tmp_path / "model.safetensors"))
    assert t["d2t"].dtype == np.int64 and t["t2d"].dtype == np.bool_ and t["t2d"].shape == (V,)
    assert t["fc.weight"].shape == (H, 3 * H) and t["midlayer.self_attn.q_proj.weight"].shape == (NH * HD, 2 * H)
    assert not any("embed" in k for k in t)
    r = load_drafter(tmp_path, target.embed)
    ids = torch.as_tensor(data.seq(0), dtype=torch.long)[None]
    _, aux = target(ids)
    a, b = d.ttt(aux, ids, 2), r.ttt(aux, ids, 2)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    save_drafter(d, tmp_path / "h", "float16")
    assert load_file(str(tmp_path / "h" / "model.safetensors"))["lm_head.weight"].dtype == np.float16
    with pytest.raises(ValueError, match=r"\[train\]"):
        save_drafter(d, tmp_path / "x", "int8")


def _np_rms(x, w, eps=1e-5):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _np_rope(x, pos, theta):  # x [T, heads, hd], rotate-half (HF layout)
    hd = x.shape[-1]
    inv = theta ** (-np.arange(0, hd, 2) / hd)
    ang = pos[:, None] * inv
    cos, sin = np.cos(np.concatenate([ang, ang], -1))[:, None], np.sin(np.concatenate([ang, ang], -1))[:, None]
    rot = np.concatenate([-x[..., hd // 2:], x[..., : hd // 2]], -1)
    return x * cos + rot * sin


def test_exported_drafter_matches_numpy_reference(tmp_path, target, data):
    """Reference §3 in numpy over the exported safetensors (chain, step 0) vs the torch drafter."""
    from safetensors.numpy import load_file

    d = _drafter(target, data)
    with torch.no_grad():  # perturb the norms so their placement matters
        for n in (d.hidden_norm, d.input_layernorm, d.post_attention_layernorm, d.norm):
            n.weight.mul_(torch.rand(H) + 0.5)
    save_drafter(d, tmp_path, "float32")
    w = load_file(str(tmp_path / "model.safetensors"))
    ids = torch.as_tensor(data.seq(2), dtype=torch.long)[None]
    _, aux = target(ids)
    ref = d.ttt(aux, ids, 1)[0][0].detach().numpy()
    x = ids[0].numpy()
    A = aux[0].numpy().astype(np.float64)
    T = len(x) - 1
    emb = target.embed.numpy()[x[1:]]
    g = A[:T] @ w["fc.weight"].T
    u = np.concatenate([_np_rms(emb, w["midlayer.input_layernorm.weight"]), _np_rms(g, w["midlayer.hidden_norm.weight"])], -1)
    pos = np.arange(T, dtype=np.float64)
    q = _np_rope((u @ w["midlayer.self_attn.q_proj.weight"].T).reshape(T, NH, HD), pos, target.cfg.rope_theta)
    k = _np_rope((u @ w["midlayer.self_attn.k_proj.weight"].T).reshape(T, NKV, HD), pos, target.cfg.rope_theta)
    v = (u @ w["midlayer.self_attn.v_proj.weight"].T).reshape(T, NKV, HD)
    k, v = np.repeat(k, NH // NKV, 1), np.repeat(v, NH // NKV, 1)
    s = np.einsum("thd,shd->hts", q, k) / math.sqrt(HD) + np.triu(np.full((T, T), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("hts,shd->thd", p, v).reshape(T, -1) @ w["midlayer.self_attn.o_proj.weight"].T
    h1 = g + o
    n = _np_rms(h1, w["midlayer.post_attention_layernorm.weight"])
    gate = n @ w["midlayer.mlp.gate_proj.weight"].T
    h2 = h1 + ((gate / (1 + np.exp(-gate))) * (n @ w["midlayer.mlp.up_proj.weight"].T)) @ w["midlayer.mlp.down_proj.weight"].T
    logits = _np_rms(h2, w["norm.weight"]) @ w["lm_head.weight"].T
    np.testing.assert_allclose(ref[:T], logits, rtol=1e-4, atol=1e-4)


def _reference_tree(d, aux, ids, r, top_k, depth, total):
    """Node-by-node EAGLE-2 expansion (reference §4.1) for one root r -> accepted length."""
    t = r - 1
    N = ids.shape[0]
    rep = d.cfg.num_heads // d.cfg.num_kv_heads
    pos0 = torch.arange(t + 1)
    g0, q0, k0, v0 = d.project(aux[: t + 1], ids[1: t + 2], pos0)
    k0, v0 = k0.repeat_interleave(rep, 1), v0.repeat_interleave(rep, 1)

    def attend(q, ks, vs):  # q [nh, hd]; ks/vs [S, nh, hd]
        s = torch.einsum("hd,shd->hs", q, ks) / math.sqrt(d.cfg.head_dim)
        return torch.einsum("hs,shd->hd", torch.softmax(s, -1), vs).reshape(-1)

    s = torch.einsum("thd,shd->hts", q0, k0) / math.sqrt(d.cfg.head_dim)
    s = s.masked_fill(pos0[None, None, :] > pos0[None, :, None], float("-inf"))
    a0 = torch.einsum("hts,shd->thd", torch.softmax(s, -1), v0).reshape(t + 1, -1)
    h0, l0 = d.finish(g0, a0)
    dids = d.draft_ids()
    lp = torch.log_softmax(l0[t], -1)
    sc, ix = lp.topk(top_k)
    # node: (token, score, parent, level, hidden-of-parent, ancestor kv list)
    nodes = [dict(tok=int(dids[i]), score=float(s_), parent=-1, level=1, h=h0[t], anc=[]) for s_, i in zip(sc, ix)]
    frontier = list(range(top_k))
    for it in range(depth):
        cands = []
        for ni in frontier:
            n = nodes[ni]
            g, q, k, v = d.project(n["h"][None], torch.tensor([n["tok"]]), torch.tensor([t + 1 + it]))
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            anc = n["anc"] + [(k[0], v[0])]
            ks = torch.cat([k0, torch.stack([a[0] for a in anc])])
            vs = torch.cat([v0, torch.stack([a[1] for a in anc])])
            h, lg = d.finish(g, attend(q[0], ks, vs)[None])
            lp = torch.log_softmax(lg[0], -1)
            csc, cix = lp.topk(top_k)
            for s_, i in zip(csc, cix):
                cands.append(len(nodes))
                nodes.append(dict(tok=int(dids[i]), score=n["score"] + float(s_), parent=ni, level=it + 2, h=h[0], anc=anc))
        best = sorted(cands, key=lambda j: -nodes[j]["score"])[:top_k]
        frontier = best
    sel = set(sorted(range(len(nodes)), key=lambda j: -nodes[j]["score"])[: total - 1])
    best = 0
    for j, n in enumerate(nodes):
        ok, k = True, j
        while k != -1:
            p = r + nodes[k]["level"]
            ok &= k in sel and p < N and nodes[k]["tok"] == int(ids[p])
            k = nodes[k]["parent"]
        if ok:
            best = max(best, n["level"])
    return best


def test_batched_tree_matches_node_by_node_reference(target, data):
    d = _drafter(target, data, vd=V)
    torch.manual_seed(3)
    with torch.no_grad():
        # A drafter that copies the target's head and input features: deep trees with matches.
        d.lm_head.weight.copy_(target.lm_head[d.draft_ids()])
    ids = torch.as_tensor(data.seq(5), dtype=torch.long)
    _, aux = target(ids[None])
    P = int(data.prompt_lens[5])
    roots = torch.arange(P, ids.shape[0] - 1)
    with torch.no_grad():
        got = draft_trees(d, aux[0], ids, roots, top_k=3, depth=3, total_tokens=10)
        want = [_reference_tree(d, aux[0], ids, int(r), 3, 3, 10) for r in roots]
    assert got.tolist() == want


def test_eval_metrics_and_replay(target, data):
    d = _drafter(target, data)
    seqs = [(list(data.seq(i)), int(data.prompt_lens[i])) for i in range(4)]
    m = evaluate_sequences(target, d, seqs, top_k=4, depth=3, total_tokens=16)
    assert 1.0 <= m["mean_accept_length"] <= 5.0 and len(m["per_position"]) == 4
    assert m["tokens"] == sum(len(s) - p - 1 for s, p in seqs)
    # Root 10 accepts 2 -> next root 13, whose 5 is clipped to the 4 tokens left.
    acc, roots = replay(np.array([2, 0, 0, 5, 0, 0, 0]), 10, 18)
    assert roots == [10, 13] and acc == [2, 4]


def test_batches_round_lengths_up_and_padding_leaves_the_loss(target, data):
    """Lengths round up to pad_multiple (fewer distinct batch shapes); the padding is right padding that
    no loss term reads, so a batch's loss terms equal those of the same rows unpadded."""
    lengths = data.lengths()
    batches = make_batches(lengths, 512, 64, np.random.default_rng(0), multiple=16)
    assert sorted(i for b in batches for i in b) == [i for i in range(len(lengths)) if 3 <= lengths[i] <= 64]
    for b in batches:
        assert len(b) * int(-(-lengths[b].max() // 16) * 16) <= 512 or len(b) == 1
        ids, lm = collate(data, b, torch.device("cpu"), multiple=16)
        assert ids.shape[1] % 16 == 0 and ids.shape[1] - int(lengths[b].max()) < 16
        assert not lm[:, int(lengths[b].max()):].any()
    d = _drafter(target, data)
    args = TrainArgs(steps_ttt=3)
    rows = list(range(8))
    ids, lm = collate(data, rows, torch.device("cpu"))
    ids64, lm64 = collate(data, rows, torch.device("cpu"), multiple=64)
    assert ids64.shape[1] == -(-ids.shape[1] // 64) * 64
    np.testing.assert_allclose(ttt_loss_now(target, d, ids64, lm64, args), ttt_loss_now(target, d, ids, lm, args),
                               rtol=1e-5)
