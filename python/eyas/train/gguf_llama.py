"""A small PyTorch Llama forward over a GGUF file (the frozen target for drafter training).

Weights are dequantized once with ``gguf.quants.dequantize``. GGUF llama Q/K rows are permuted
for interleaved ("GPT-J") RoPE, so this model rotates adjacent pairs (2i, 2i+1) and needs no
un-permute. Besides logits it returns the EAGLE-3 aux states: the residual stream entering the
layers ``aux_layers`` (default [2, L//2, L-3]), concatenated low|mid|high.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5
    tied_embeddings: bool = True
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = 2
    aux_layers: list[int] = field(default_factory=list)

    def __post_init__(self):
        if not self.aux_layers:
            n = self.num_layers
            self.aux_layers = [2, n // 2, n - 3] if n >= 6 else [min(1, n - 1), n // 2, max(n - 1, 0)]


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def rms_norm(x, w, eps):
    # fp32 statistics even under autocast: the target's reference runtime does the same.
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float()).to(x.dtype)


def rope_tables(pos, hd, theta):
    """pos: [B, T] int -> (cos, sin) each [B, T, 1, hd/2], computed once per forward."""
    inv = theta ** (-torch.arange(0, hd, 2, device=pos.device, dtype=torch.float32) / hd)  # [hd/2]
    ang = pos.float()[..., None] * inv
    return ang.cos()[:, :, None, :], ang.sin()[:, :, None, :]


def rope_interleaved(x, cos, sin):
    """x: [B, T, heads, hd]. Rotates pairs (2i, 2i+1) (GGUF llama layout)."""
    hd = x.shape[-1]
    xf = x.float().unflatten(-1, (hd // 2, 2))
    a, b = xf[..., 0], xf[..., 1]
    out = torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)
    return out.to(x.dtype)


class GGUFLlama(torch.nn.Module):
    """Frozen Llama target. All weights are buffers: nothing here is trained."""

    def __init__(self, cfg: LlamaConfig, tensors: dict[str, np.ndarray]):
        super().__init__()
        self.cfg = cfg
        for name, arr in tensors.items():
            self.register_buffer(name.replace(".", "__"), torch.from_numpy(np.array(arr, dtype=np.float32)))
        if not cfg.tied_embeddings and "output.weight" not in tensors:
            raise ValueError("[train] GGUF has untied embeddings but no output.weight")

    def w(self, name):
        return getattr(self, name.replace(".", "__"))

    @property
    def embed(self):  # [V, H]
        return self.w("token_embd.weight")

    @property
    def lm_head(self):  # [V, H]
        return self.embed if self.cfg.tied_embeddings else self.w("output.weight")

    @classmethod
    def from_gguf(cls, path, aux_layers=None):
        import gguf
        from gguf.quants import dequantize

        r = gguf.GGUFReader(str(path))
        arch = _field(r, "general.architecture")
        if arch != "llama":
            raise ValueError(f"[train] only llama-architecture GGUF targets are supported, got {arch!r}")
        tensors = {t.name: dequantize(t.data, t.tensor_type).reshape([int(d) for d in reversed(t.shape)]) for t in r.tensors}
        emb = tensors["token_embd.weight"]
        nh = int(_field(r, "llama.attention.head_count"))
        hidden = int(_field(r, "llama.embedding_length"))
        cfg = LlamaConfig(
            vocab_size=emb.shape[0],
            hidden_size=hidden,
            intermediate_size=int(_field(r, "llama.feed_forward_length")),
            num_layers=int(_field(r, "llama.block_count")),
            num_heads=nh,
            num_kv_heads=int(_field(r, "llama.attention.head_count_kv", nh)),
            head_dim=int(_field(r, "llama.rope.dimension_count", hidden // nh)),
            rope_theta=float(_field(r, "llama.rope.freq_base", 10000.0)),
            rms_eps=float(_field(r, "llama.attention.layer_norm_rms_epsilon", 1e-5)),
            tied_embeddings="output.weight" not in tensors,
            bos_id=int(_field(r, "tokenizer.ggml.bos_token_id", 1)),
            eos_id=int(_field(r, "tokenizer.ggml.eos_token_id", 2)),
            pad_id=int(_field(r, "tokenizer.ggml.padding_token_id", _field(r, "tokenizer.ggml.eos_token_id", 2))),
            aux_layers=list(aux_layers or []),
        )
        return cls(cfg, tensors)

    def forward(self, ids, pos=None, key_mask=None, kv=None, cache_pos=None, want_aux=True):
        """Run the target.

        ids: [B, T] int64. pos: [B, T] RoPE positions (default arange).
        key_mask: [B, S] bool, True = key may be attended (padding off); S = T without cache,
          else the cache length. Attention is also causal in cache slots.
        kv: optional preallocated cache (K, V) each [L, B, nkv, S, hd]; the T new entries are
          written at slots cache_pos .. cache_pos+T-1.
        Returns (final_hidden [B, T, H] after the output norm, aux [B, T, 3H] or None).
        """
        c = self.cfg
        B, T = ids.shape
        dev = ids.device
        if pos is None:
            pos = torch.arange(T, device=dev).expand(B, T)
        x = F.embedding(ids, self.embed)  # fp32 residual stream; matmuls follow autocast
        if kv is None:
            S, start = T, 0
        else:
            S, start = kv[0].shape[3], int(cache_pos)
        qi = torch.arange(T, device=dev)[:, None] + start
        ki = torch.arange(S, device=dev)[None, :]
        S = start + T  # slots beyond the newest entry are never read
        mask = (ki[:, :S] <= qi)[None, None]  # [1, 1, T, S] causal in slots
        if key_mask is not None:
            mask = mask & key_mask[:, None, None, :S]
        cos, sin = rope_tables(pos, c.head_dim, c.rope_theta)
        aux = []
        for i in range(c.num_layers):
            if want_aux and i in c.aux_layers:
                aux.append(x)
            p = f"blk.{i}."
            h = rms_norm(x, self.w(p + "attn_norm.weight"), c.rms_eps)
            q = (h @ self.w(p + "attn_q.weight").T).view(B, T, c.num_heads, c.head_dim)
            k = (h @ self.w(p + "attn_k.weight").T).view(B, T, c.num_kv_heads, c.head_dim)
            v = (h @ self.w(p + "attn_v.weight").T).view(B, T, c.num_kv_heads, c.head_dim)
            q, k = rope_interleaved(q, cos, sin), rope_interleaved(k, cos, sin)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, T, hd]
            if kv is not None:
                kv[0][i, :, :, start:start + T] = k.to(kv[0].dtype)
                kv[1][i, :, :, start:start + T] = v.to(kv[1].dtype)
                k, v = kv[0][i][:, :, : start + T].to(q.dtype), kv[1][i][:, :, : start + T].to(q.dtype)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=c.num_heads != c.num_kv_heads)
            a = a.transpose(1, 2).reshape(B, T, c.num_heads * c.head_dim)
            x = x + a @ self.w(p + "attn_output.weight").T
            h = rms_norm(x, self.w(p + "ffn_norm.weight"), c.rms_eps)
            g = h @ self.w(p + "ffn_gate.weight").T
            u = h @ self.w(p + "ffn_up.weight").T
            x = x + (F.silu(g) * u) @ self.w(p + "ffn_down.weight").T
        final = rms_norm(x, self.w("output_norm.weight"), c.rms_eps)
        return final, (torch.cat(aux, -1) if want_aux else None)

    def logits(self, final, rows=None):
        """final: [..., H] -> logits [..., V] (or only the vocab rows `rows`)."""
        w = self.lm_head if rows is None else self.lm_head[rows]
        return final @ w.T
