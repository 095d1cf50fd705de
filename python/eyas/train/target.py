"""The frozen target for drafter training: a PyTorch forward over eyas's model description.

Built from what `eyas.loaders.load_model` returns — the spec dict the C++ runtime runs and its
weights table — with every weight dequantized once to float32 (eyas.loaders.dtypes). The spec
says how to run it, as it does for the runtime: rope style and inverse frequencies (GGUF llama
files have Q/K rows permuted for interleaved rope, which rope_style "interleaved" encodes), QKV
bias, QK-norm, gated attention output, MoE, tied embeddings, Gated DeltaNet mixers (train/gdn.py). Besides the final hidden state it
returns the EAGLE-3 aux states: the residual stream entering `aux_layers`, concatenated low|mid|high.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from eyas.drafters.eagle3 import default_aux_layers
from eyas.loaders.dtypes import dequantize

from .gdn import gdn_mixer
from .layers import apply_rope, rms_norm, rope_tables


@dataclass
class TargetConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int  # dense FFN width; for MoE targets top_k x expert width (the active FFN)
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_eps: float
    rope_theta: float
    tied_embeddings: bool
    eos_ids: list[int]  # generation stops at any of them
    aux_layers: list[int] = field(default_factory=list)

    @property
    def eos_id(self) -> int:  # fills finished rows
        return self.eos_ids[0]

    @property
    def pad_id(self) -> int:  # left padding; masked out, any id in the vocabulary works
        return self.eos_ids[0]


def _config(spec: dict, tokenizer, rope_theta: float, aux_layers) -> TargetConfig:
    L, moe = spec["num_layers"], spec["moe"]
    inter = spec["intermediate_size"] if moe is None else moe["top_k"] * moe["expert_intermediate_size"]
    aux = list(aux_layers) if aux_layers else default_aux_layers(L)
    if any(not 0 <= i < L for i in aux):
        raise ValueError(f"[train] aux layers {aux} are out of range for a target with {L} layers")
    if not tokenizer.eos_ids:
        raise ValueError("[train] the target's tokenizer names no end-of-sequence token")
    return TargetConfig(vocab_size=spec["vocab_size"], hidden_size=spec["hidden_size"], intermediate_size=inter,
                        num_layers=L, num_heads=spec["num_heads"], num_kv_heads=spec["num_kv_heads"],
                        head_dim=spec["head_dim"], rms_eps=float(spec["rms_eps"]), rope_theta=float(rope_theta),
                        tied_embeddings=bool(spec["tie_embeddings"]), eos_ids=list(tokenizer.eos_ids), aux_layers=aux)


def group_mask(mask, group: int):
    """mask: bool [B or 1, 1, T, S] -> [B or 1, 1, group * T, S], rows (g, t) as grouped_attention lays
    out the queries of one kv head."""
    if group == 1:
        return mask
    b, _, t, s = mask.shape
    return mask.unsqueeze(2).expand(b, 1, group, t, s).reshape(b, 1, group * t, s)


def grouped_attention(q, k, v, mask):
    """q: [B, Hq, T, D]; k, v: [B, Hkv, S, D] (query head h reads kv head h // (Hq / Hkv)); mask: bool
    [B or 1, 1, Hq / Hkv * T, S] from group_mask, True = may attend -> [B, Hq, T, D].

    Each kv head's query heads become rows of one SDPA head, so the memory-efficient kernel, the one
    that takes a mask, runs on K and V as they are: with `enable_gqa` and a mask SDPA falls back to its
    math kernel, which repeats K and V for every query head and materialises the scores."""
    B, Hq, T, D = q.shape
    Hkv = k.shape[1]
    a = F.scaled_dot_product_attention(q.reshape(B, Hkv, Hq // Hkv * T, D), k, v, attn_mask=mask)
    return a.reshape(B, Hq, T, D)


class TorchTarget(torch.nn.Module):
    """Frozen target. All weights are buffers: nothing here is trained."""

    def __init__(self, spec: dict, weights: dict, cfg: TargetConfig):
        super().__init__()
        self.spec, self.cfg = spec, cfg
        # The runtime's per-block FFN kinds; a spec without "layers" marks MoE where a block has a router.
        kinds = spec.get("layers") or [{"ffn": "moe_ffn" if f"blk.{i}.ffn_gate_inp" in weights else "dense_ffn"}
                                        for i in range(spec["num_layers"])]
        self.ffn_kinds = [k["ffn"] for k in kinds]
        self.mixers = [k.get("mixer", "attention") for k in kinds]
        self._gdn_cache: dict[int, dict] = {}  # recurrent state of gdn layers across cached calls
        for name, entry in weights.items():  # own writable copies: F32 entries are views of a memory map
            w = np.require(dequantize(*entry), np.float32, ["C", "W", "O"])
            self.register_buffer(name.replace(".", "__"), torch.from_numpy(w))
        self.register_buffer("rope_inv_freq", torch.from_numpy(np.asarray(spec["rope_inv_freq"], np.float32)))

    @classmethod
    def from_loaded(cls, loaded, aux_layers=None) -> "TorchTarget":
        """loaded: an `eyas.loaders.LoadedModel` (GGUF file or HF folder)."""
        return cls(loaded.spec, loaded.weights, _config(loaded.spec, loaded.tokenizer, loaded.rope_theta, aux_layers))

    @classmethod
    def load(cls, path, aux_layers=None) -> "TorchTarget":
        from eyas.loaders import load_model

        return cls.from_loaded(load_model(path), aux_layers)

    def w(self, name):
        return getattr(self, name.replace(".", "__"))

    @property
    def embed(self):  # [V, H]
        return self.w("token_embd")

    @property
    def lm_head(self):  # [V, H]
        return self.embed if self.cfg.tied_embeddings else self.w("output")

    def forward(self, ids, pos=None, key_mask=None, kv=None, cache_pos=None, want_aux=True):
        """Run the target.

        ids: [B, T] int64. pos: [B, T] RoPE positions (default arange).
        key_mask: [B, S] bool, True = key may be attended (padding off); S = T without cache,
          else the cache length. Attention is also causal in cache slots.
        kv: optional preallocated cache (K, V) each [L, B, nkv, S, hd]; the T new entries are
          written at slots cache_pos .. cache_pos+T-1. cache_pos may be a 0-d device tensor when T = 1
          (one decode step with static shapes, as a CUDA graph replays it): the step then attends over
          all S slots with the later ones masked. Attention layers only.
        Returns (final_hidden [B, T, H] after the output norm, aux [B, T, len(aux_layers)*H] or None).
        """
        c, s = self.cfg, self.spec
        B, T = ids.shape
        dev = ids.device
        if pos is None:
            pos = torch.arange(T, device=dev).expand(B, T)
        x = F.embedding(ids, self.embed)  # fp32 residual stream; matmuls follow autocast
        static = torch.is_tensor(cache_pos)  # the slot lives on the device: no host value, static shapes
        if static and (T != 1 or "gdn" in self.mixers):
            raise ValueError("[train] a device-tensor cache_pos takes one token of an attention-only target")
        if kv is None:
            S, start = T, 0
        else:
            S, start = kv[0].shape[3], (cache_pos if static else int(cache_pos))
        qi = torch.arange(T, device=dev)[:, None] + start
        ki = torch.arange(S, device=dev)[None, :]
        if not static:
            S = start + T  # slots beyond the newest entry are never read
        mask = (ki[:, :S] <= qi)[None, None]  # [1, 1, T, S] causal in slots
        if key_mask is not None:
            mask = mask & key_mask[:, None, None, :S]
        # Causal alone (training: no cache, right padding) takes SDPA's causal kernels. A decode step's
        # few query rows go through grouped_attention (one mask for every layer); a masked prefill chunk
        # stays on SDPA's GQA option, which measured faster there than the grouped rows' larger mask
        # (512 prompts of 1,000-2,000 tokens on an H100: 2.64 against 2.93 s).
        group = c.num_heads // c.num_kv_heads
        causal_only = kv is None and key_mask is None
        grouped = not causal_only and T == 1
        attn_mask = None if causal_only else group_mask(mask, group) if grouped else mask
        cos, sin = rope_tables(pos, self.rope_inv_freq)
        if kv is not None and not static and start == 0:
            self._gdn_cache = {}
        valid = key_mask[:, start:start + T] if key_mask is not None and not static else None
        aux = {}
        for i in range(c.num_layers):
            if want_aux and i in c.aux_layers:
                aux[i] = x
            p = f"blk.{i}."
            h = rms_norm(x, self.w(p + "attn_norm"), c.rms_eps)
            if self.mixers[i] == "gdn":  # recurrent: state carried in _gdn_cache when a kv cache is used
                cache = self._gdn_cache.setdefault(i, {}) if kv is not None else None
                x = x + gdn_mixer(self.w, p, h, s["gdn"], c.rms_eps, valid, cache)
                h = rms_norm(x, self.w(p + "ffn_norm"), c.rms_eps)
                x = x + (self._moe(h, p) if self.ffn_kinds[i] == "moe_ffn" else self._dense(h, p, ""))
                continue
            q, k, v = (h @ self.w(p + n).T for n in ("attn_q", "attn_k", "attn_v"))
            if s["qkv_bias"]:
                q, k, v = q + self.w(p + "attn_q.bias"), k + self.w(p + "attn_k.bias"), v + self.w(p + "attn_v.bias")
            gate = None
            if s["attn_output_gate"]:  # per head: D query rows, then D gate rows
                qg = q.view(B, T, c.num_heads, 2 * c.head_dim)
                q, gate = qg[..., : c.head_dim], qg[..., c.head_dim:].reshape(B, T, -1)
            q = q.reshape(B, T, c.num_heads, c.head_dim)
            k = k.view(B, T, c.num_kv_heads, c.head_dim)
            v = v.view(B, T, c.num_kv_heads, c.head_dim)
            if s["qk_norm"]:
                q = rms_norm(q, self.w(p + "attn_q_norm"), c.rms_eps)
                k = rms_norm(k, self.w(p + "attn_k_norm"), c.rms_eps)
            q, k = apply_rope(q, cos, sin, s["rope_style"]), apply_rope(k, cos, sin, s["rope_style"])
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, T, hd]
            if static:
                kv[0][i].index_copy_(2, start.view(1), k.to(kv[0].dtype))
                kv[1][i].index_copy_(2, start.view(1), v.to(kv[1].dtype))
                q, k, v = q.to(kv[0].dtype), kv[0][i], kv[1][i]
            elif kv is not None:
                kv[0][i, :, :, start:start + T] = k.to(kv[0].dtype)
                kv[1][i, :, :, start:start + T] = v.to(kv[1].dtype)
                # Attend in the cache's dtype: converting the whole cache to q's (fp32 after RoPE) at every
                # step moved ~4x the cache's bytes per layer in bf16 generation.
                q = q.to(kv[0].dtype)
                k, v = kv[0][i][:, :, : start + T], kv[1][i][:, :, : start + T]
            if grouped:
                a = grouped_attention(q, k, v, attn_mask)
            else:
                a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal_only,
                                                   enable_gqa=group > 1)
            a = a.transpose(1, 2).reshape(B, T, c.num_heads * c.head_dim)
            if kv is not None:  # back to the residual's dtype (the training forward, no cache, never left it)
                a = a.to(x.dtype)
            if gate is not None:
                a = a * torch.sigmoid(gate)
            x = x + a @ self.w(p + "attn_output").T
            h = rms_norm(x, self.w(p + "ffn_norm"), c.rms_eps)
            x = x + (self._moe(h, p) if self.ffn_kinds[i] == "moe_ffn" else self._dense(h, p, ""))
        final = rms_norm(x, self.w("output_norm"), c.rms_eps)
        return final, (torch.cat([aux[i] for i in c.aux_layers], -1) if want_aux else None)

    def _dense(self, h, p, suffix, e=None):
        """SwiGLU FFN; with e: expert e of the stacked `_exps` weights."""
        g, u, d = (self.w(p + f"ffn_{n}{suffix}") for n in ("gate", "up", "down"))
        if e is not None:
            g, u, d = g[e], u[e], d[e]
        return (F.silu(h @ g.T) * (h @ u.T)) @ d.T

    def _moe(self, h, p):
        """h: [B, T, H]. Router softmax, top-k experts (weights renormalized if norm_topk_prob),
        plus the shared expert (sigmoid-gated when the model has that gate)."""
        moe = self.spec["moe"]
        flat = h.reshape(-1, h.shape[-1])
        probs = torch.softmax((flat @ self.w(p + "ffn_gate_inp").T).float(), -1)
        top_p, top_e = probs.topk(moe["top_k"], -1)  # [N, k]
        if moe["norm_topk_prob"]:
            top_p = top_p / top_p.sum(-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e in top_e.unique().tolist():
            rows, slot = (top_e == e).nonzero(as_tuple=True)
            y = self._dense(flat[rows], p, "_exps", e) * top_p[rows, slot, None]
            out.index_add_(0, rows, y.to(out.dtype))  # matmuls may run in bf16 under autocast
        if moe["shared_expert_intermediate_size"]:
            shared = self._dense(flat, p, "_shexp")
            if hasattr(self, (p + "ffn_gate_inp_shexp").replace(".", "__")):
                shared = shared * torch.sigmoid(flat @ self.w(p + "ffn_gate_inp_shexp").T)
            out = out + shared
        return out.view_as(h)

    def logits(self, final, rows=None):
        """final: [..., H] -> logits [..., V] (or only the vocab rows `rows`)."""
        w = self.lm_head if rows is None else self.lm_head[rows]
        return final @ w.T
