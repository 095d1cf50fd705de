"""Tiny random Transformers, a numpy reference forward, and parity of _core.Transformer against it.

Other tests/test_transformer_*.py files import the builders from here. The reference runs the whole
sequence from scratch in float64 with an explicit visibility matrix, so it also checks tree masks.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import quants

from eyas import _core
from tests.parity import TOLERANCES

# End-to-end tolerance for quantized weights: the kernels quantize activations to 8 bits per block,
# which the dequantize-then-float reference does not; errors add up over the layers.
MODEL_QUANT_REL = 3e-2


def make_model(seed=0, *, arch="llama", qtype=Q.F32, vocab=128, hidden=64, layers=4, heads=4, kv_heads=2,
               head_dim=16, inter=96, rope_style="neox", rot_dim=None, qkv_bias=False, qk_norm=False, gated=False,
               moe=None, tie=True, embd_qtype=None):
    """Returns (spec, weights for _core, float32 weights for the reference)."""
    rng = np.random.default_rng(seed)
    rot_dim = rot_dim or head_dim
    inv_freq = (1.0 / 10000.0 ** (np.arange(0, rot_dim, 2) / rot_dim)).astype(np.float32)
    spec = dict(arch=arch, vocab_size=vocab, hidden_size=hidden, num_layers=layers, num_heads=heads,
                num_kv_heads=kv_heads, head_dim=head_dim, intermediate_size=inter, rms_eps=1e-5,
                rope_style=rope_style, rot_dim=rot_dim, rope_inv_freq=inv_freq, qkv_bias=qkv_bias,
                qk_norm=qk_norm, attn_output_gate=gated, moe=moe, tie_embeddings=tie)
    core, ref = {}, {}

    def mat(name, shape, scale, qt=None):
        qt = qtype if qt is None else qt
        w = (rng.standard_normal(shape) * scale).astype(np.float32)
        if qt == Q.F32:
            core[name], ref[name] = (w, 0, list(shape)), w
            return
        flat = w.reshape(-1, shape[-1])
        raw = quants.quantize(flat, qt)
        core[name] = (np.ascontiguousarray(raw).reshape(-1).view(np.uint8), int(qt), list(shape))
        ref[name] = quants.dequantize(raw, qt).reshape(shape).astype(np.float32)

    def vec(name, n, base=1.0, scale=0.1):
        v = (base + rng.standard_normal(n) * scale).astype(np.float32)
        core[name], ref[name] = (v, 0, [n]), v

    H, D = hidden, head_dim
    mat("token_embd", (vocab, H), 1.0, embd_qtype)
    vec("output_norm", H)
    if not tie:
        mat("output", (vocab, H), H ** -0.5)
    qrows = heads * D * (2 if gated else 1)
    for i in range(layers):
        p = f"blk.{i}."
        vec(p + "attn_norm", H)
        mat(p + "attn_q", (qrows, H), H ** -0.5)
        mat(p + "attn_k", (kv_heads * D, H), H ** -0.5)
        mat(p + "attn_v", (kv_heads * D, H), H ** -0.5)
        if qkv_bias:
            vec(p + "attn_q.bias", qrows, 0.0, 0.2)
            vec(p + "attn_k.bias", kv_heads * D, 0.0, 0.2)
            vec(p + "attn_v.bias", kv_heads * D, 0.0, 0.2)
        if qk_norm:
            vec(p + "attn_q_norm", D)
            vec(p + "attn_k_norm", D)
        mat(p + "attn_output", (H, heads * D), (heads * D) ** -0.5)
        vec(p + "ffn_norm", H)
        if moe and i % 2 == 0:  # odd layers stay dense (Qwen3-MoE's mlp_only_layers)
            E, Ie, Is = moe["num_experts"], moe["expert_intermediate_size"], moe["shared_expert_intermediate_size"]
            mat(p + "ffn_gate_inp", (E, H), 1.0, Q.F32)
            mat(p + "ffn_gate_exps", (E, Ie, H), H ** -0.5)
            mat(p + "ffn_up_exps", (E, Ie, H), H ** -0.5)
            mat(p + "ffn_down_exps", (E, H, Ie), Ie ** -0.5)
            if Is:
                mat(p + "ffn_gate_shexp", (Is, H), H ** -0.5)
                mat(p + "ffn_up_shexp", (Is, H), H ** -0.5)
                mat(p + "ffn_down_shexp", (H, Is), Is ** -0.5)
                if moe.get("shared_expert_gate"):
                    mat(p + "ffn_gate_inp_shexp", (1, H), H ** -0.5, Q.F32)
        else:
            mat(p + "ffn_gate", (inter, H), H ** -0.5)
            mat(p + "ffn_up", (inter, H), H ** -0.5)
            mat(p + "ffn_down", (H, inter), inter ** -0.5)
    return spec, core, ref


MOE = dict(num_experts=4, top_k=2, norm_topk_prob=True, expert_intermediate_size=32,
           shared_expert_intermediate_size=64, shared_expert_gate=True)


# ---- numpy reference (float64) ----

def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, pos, inv_freq, rot, style):
    # x: [N, heads, D]
    ang = pos[:, None].astype(np.float64) * inv_freq[None, :].astype(np.float64)  # [N, rot/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    y = x.copy()
    if style == "neox":
        h = rot // 2
        a, b = x[..., :h], x[..., h:rot]
        y[..., :h], y[..., h:rot] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., 0:rot:2], x[..., 1:rot:2]
        y[..., 0:rot:2], y[..., 1:rot:2] = a * c - b * s, b * c + a * s
    return y


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _moe(x, W, p, m):
    logits = x @ W[p + "ffn_gate_inp"].T
    pr = np.exp(logits - logits.max(-1, keepdims=True))
    pr /= pr.sum(-1, keepdims=True)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-pr[t], kind="stable")[: m["top_k"]]
        w = pr[t, top] / (pr[t, top].sum() if m["norm_topk_prob"] else 1.0)
        for e, we in zip(top, w):
            g = x[t] @ W[p + "ffn_gate_exps"][e].T
            u = x[t] @ W[p + "ffn_up_exps"][e].T
            out[t] += we * ((_silu(g) * u) @ W[p + "ffn_down_exps"][e].T)
    if m["shared_expert_intermediate_size"]:
        sh = (_silu(x @ W[p + "ffn_gate_shexp"].T) * (x @ W[p + "ffn_up_shexp"].T)) @ W[p + "ffn_down_shexp"].T
        if m.get("shared_expert_gate"):
            sh = sh / (1.0 + np.exp(-(x @ W[p + "ffn_gate_inp_shexp"].T)))
        out += sh
    return out


def reference_forward(spec, W, tokens, positions, visible, aux_layers=()):
    """tokens, positions: [N]; visible: bool [N, N] (row i sees columns j). Returns logits [N, V], aux."""
    W = {k: v.astype(np.float64) for k, v in W.items()}
    H, D, Hq, Hkv = spec["hidden_size"], spec["head_dim"], spec["num_heads"], spec["num_kv_heads"]
    N, eps = len(tokens), spec["rms_eps"]
    x = W["token_embd"][np.asarray(tokens)]
    aux = []
    for l in range(spec["num_layers"] + 1):
        aux += [x.copy() for a in aux_layers if a == l]
        if l == spec["num_layers"]:
            break
        p = f"blk.{l}."
        h = _rms(x, W[p + "attn_norm"], eps)
        q, k, v = (h @ W[p + n].T + (W[p + n + ".bias"] if spec["qkv_bias"] else 0) for n in ("attn_q", "attn_k", "attn_v"))
        gate = None
        if spec["attn_output_gate"]:
            qg = q.reshape(N, Hq, 2 * D)
            q, gate = qg[..., :D], qg[..., D:].reshape(N, Hq * D)
        q, k, v = q.reshape(N, Hq, D), k.reshape(N, Hkv, D), v.reshape(N, Hkv, D)
        if spec["qk_norm"]:
            q, k = _rms(q, W[p + "attn_q_norm"], eps), _rms(k, W[p + "attn_k_norm"], eps)
        pos = np.asarray(positions)
        q = _rope(q, pos, spec["rope_inv_freq"], spec["rot_dim"], spec["rope_style"])
        k = _rope(k, pos, spec["rope_inv_freq"], spec["rot_dim"], spec["rope_style"])
        o = np.zeros((N, Hq, D))
        for hh in range(Hq):
            kh = hh // (Hq // Hkv)
            s = q[:, hh] @ k[:, kh].T / np.sqrt(D)
            s = np.where(visible, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            o[:, hh] = (s / s.sum(-1, keepdims=True)) @ v[:, kh]
        o = o.reshape(N, Hq * D)
        if gate is not None:
            o = o / (1.0 + np.exp(-gate))
        x = x + o @ W[p + "attn_output"].T
        h = _rms(x, W[p + "ffn_norm"], eps)
        if (p + "ffn_gate_inp") in W:
            x = x + _moe(h, W, p, spec["moe"])
        else:
            x = x + (_silu(h @ W[p + "ffn_gate"].T) * (h @ W[p + "ffn_up"].T)) @ W[p + "ffn_down"].T
    out_w = W["token_embd"] if spec["tie_embeddings"] else W["output"]
    logits = _rms(x, W["output_norm"], eps) @ out_w.T
    return logits, (np.concatenate(aux, -1) if aux else None)


def causal(n):
    return np.tril(np.ones((n, n), dtype=bool))


def random_tree(rng, T):
    """Random topologically ordered tree: parents[0] = -1, parents[i] < i. Returns parents, depths, mask."""
    parents = np.full(T, -1)
    depths = np.zeros(T, dtype=np.int32)
    mask = np.zeros((T, T), dtype=np.uint8)
    for i in range(T):
        if i:
            parents[i] = rng.integers(0, i)
            depths[i] = depths[parents[i]] + 1
            mask[i] = mask[parents[i]]
        mask[i, i] = 1
    return parents, depths, mask


# ---- parity tests ----

CONFIGS = {
    "llama-f32": dict(),
    "llama-interleaved-partial-rope": dict(rope_style="interleaved", rot_dim=8),
    "qwen2-bias-untied": dict(arch="qwen2", qkv_bias=True, tie=False),
    "qwen3-qknorm": dict(arch="qwen3", qk_norm=True),
    "gated-output": dict(arch="qwen3", qk_norm=True, gated=True),
    "qwen3_moe": dict(arch="qwen3_moe", qk_norm=True, moe=MOE),
    "qwen3_moe-plain": dict(arch="qwen3_moe", moe=dict(MOE, norm_topk_prob=False, shared_expert_intermediate_size=0,
                                                        shared_expert_gate=False)),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_prefill_matches_reference(name):
    spec, core, ref = make_model(1, **CONFIGS[name])
    aux_layers = [0, 2, 4]
    m = _core.Transformer(spec, core, max_context=64, aux_layers=aux_layers)
    toks = np.random.default_rng(2).integers(0, spec["vocab_size"], 13).astype(np.int32)
    out = m.forward(toks, logits="all", capture_aux=True)
    want, want_aux = reference_forward(spec, ref, toks, np.arange(13), causal(13), aux_layers)
    atol, rtol = TOLERANCES["f32_reduce"]
    np.testing.assert_allclose(out["logits"], want, atol=atol + rtol * np.abs(want).max(), rtol=0)
    np.testing.assert_allclose(out["aux"], want_aux, atol=atol + rtol * np.abs(want_aux).max(), rtol=0)


@pytest.mark.parametrize("qtype", [Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.F16])
def test_quantized_model_matches_dequantized_reference(qtype):
    spec, core, ref = make_model(3, qtype=qtype, hidden=64, head_dim=16, inter=96)
    m = _core.Transformer(spec, core, max_context=32)
    toks = np.arange(9, dtype=np.int32) * 7 % spec["vocab_size"]
    got = m.forward(toks, logits="all")["logits"]
    want, _ = reference_forward(spec, ref, toks, np.arange(9), causal(9))
    err = np.abs(got - want).max()
    assert err <= MODEL_QUANT_REL * np.abs(want).max(), f"max err {err}"


def test_tree_verify_matches_reference():
    spec, core, ref = make_model(4, arch="qwen3", qk_norm=True)
    rng = np.random.default_rng(5)
    m = _core.Transformer(spec, core, max_context=64)
    prefix = rng.integers(0, spec["vocab_size"], 6).astype(np.int32)
    m.prefill(prefix)
    _, depths, mask = random_tree(rng, 9)
    tree = rng.integers(0, spec["vocab_size"], 9).astype(np.int32)
    got = m.forward(tree, mask=mask, depths=depths, logits="all")["logits"]
    n, T = 6, 9
    vis = np.zeros((n + T, n + T), dtype=bool)
    vis[:n, :n] = causal(n)
    vis[n:, :n] = True
    vis[n:, n:] = mask.astype(bool)
    pos = np.concatenate([np.arange(n), n + depths])
    want, _ = reference_forward(spec, ref, np.concatenate([prefix, tree]), pos, vis)
    atol, rtol = TOLERANCES["f32_reduce"]
    np.testing.assert_allclose(got, want[n:], atol=atol + rtol * np.abs(want).max(), rtol=0)
