"""Hydra++ drafter in PyTorch (hass_and_user_asks.md Part A1), the math of the C++ HydraDrafter.

A prefix block (one decoder block of the target's shape, own weights) runs causally over the
target's output-normed final states f_t and gives a context vector c_t = norm(block(f)_t). Head i
drafts the token i+2 places after t from [c_t | E(x_{t+1}) | E(d_1) .. E(d_i)]: the root token and
the i tokens drafted before it on the path (E = the target's frozen token embedding), through

    z = c_t + silu(in_i(u));  z += silu(res_{i,l}(z)) for l = 1..R-1;  logits = lm_head(norm(z))

Heads are sequentially dependent (each sees what the earlier ones chose) but run no attention, so
drafting a tree level costs a few small matmuls. One lm_head over the draft vocabulary is shared by
the heads, and a head's residual path starts at c_t instead of a learned projection of its whole
input (ours: Hydra gives each head its own lm_head and projection; these keep the drafter small).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from eyas.drafters.hydra import HydraConfig

from .drafter import DraftVocab, RMSNorm
from .layers import apply_rope, rope_tables

# Prefix block parameter -> name in the exported checkpoint (the target's GGUF names for block 0, which
# the C++ layer registry's "attention" and "dense_ffn" kinds read).
PREFIX_NAMES = {
    "attn_norm": "blk.0.attn_norm", "q": "blk.0.attn_q", "k": "blk.0.attn_k", "v": "blk.0.attn_v",
    "o": "blk.0.attn_output", "ffn_norm": "blk.0.ffn_norm", "gate": "blk.0.ffn_gate", "up": "blk.0.ffn_up",
    "down": "blk.0.ffn_down", "prefix_norm": "hydra.prefix_norm",
}


class HydraHead(nn.Module):
    """One draft head over the concatenated input u of width (i+2)H; its residual path starts at c = u[:H]."""

    def __init__(self, H: int, width: int, layers: int):
        super().__init__()
        self.H = H
        self.inp = nn.Linear(width, H, bias=False)
        self.res = nn.ModuleList(nn.Linear(H, H, bias=False) for _ in range(layers - 1))
        with torch.no_grad():  # Medusa-style: residual blocks start at zero, the head near the identity on c
            nn.init.normal_(self.inp.weight, std=0.02)
            for r in self.res:
                r.weight.zero_()

    def forward(self, u):
        z = u[..., : self.H] + F.silu(self.inp(u))
        for r in self.res:
            z = z + F.silu(r(z))
        return z


class HydraDrafter(DraftVocab, nn.Module):
    reads_final = True  # trained on the target's output-normed final state, not EAGLE-3's aux layers

    def __init__(self, cfg: HydraConfig, embed: torch.Tensor, rope_inv_freq: torch.Tensor):
        super().__init__()
        self.cfg = cfg
        H, I, hd = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
        self.attn_norm = RMSNorm(H, cfg.rms_eps)
        self.q = nn.Linear(H, cfg.num_heads * hd, bias=False)
        self.k = nn.Linear(H, cfg.num_kv_heads * hd, bias=False)
        self.v = nn.Linear(H, cfg.num_kv_heads * hd, bias=False)
        self.o = nn.Linear(cfg.num_heads * hd, H, bias=False)
        self.ffn_norm = RMSNorm(H, cfg.rms_eps)
        self.gate = nn.Linear(H, I, bias=False)
        self.up = nn.Linear(H, I, bias=False)
        self.down = nn.Linear(I, H, bias=False)
        self.prefix_norm = RMSNorm(H, cfg.rms_eps)
        for m in (self.q, self.k, self.v, self.gate, self.up):
            nn.init.normal_(m.weight, std=0.02)
        for m in (self.o, self.down):  # the block starts as the identity on f
            nn.init.zeros_(m.weight)
        self.heads = nn.ModuleList(HydraHead(H, (i + 2) * H, cfg.head_layers) for i in range(cfg.num_draft_heads))
        self.norm = RMSNorm(H, cfg.rms_eps)
        self.lm_head = nn.Linear(H, cfg.draft_vocab_size, bias=False)
        nn.init.normal_(self.lm_head.weight, std=0.02)
        self.register_buffer("embed", embed.detach().float().clone(), persistent=False)
        self.register_buffer("rope_inv_freq", rope_inv_freq.detach().float().clone(), persistent=False)
        self.init_vocab()

    def context(self, f):
        """f: [B, T, H] the target's output-normed final states -> c [B, T, H] (causal prefix block)."""
        c = self.cfg
        B, T, _ = f.shape
        pos = torch.arange(T, device=f.device).expand(B, T)
        cos, sin = rope_tables(pos, self.rope_inv_freq)
        h = self.attn_norm(f)
        q = apply_rope(self.q(h).view(B, T, c.num_heads, c.head_dim), cos, sin, c.rope_style)
        k = apply_rope(self.k(h).view(B, T, c.num_kv_heads, c.head_dim), cos, sin, c.rope_style)
        v = self.v(h).view(B, T, c.num_kv_heads, c.head_dim)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                           enable_gqa=c.num_heads != c.num_kv_heads)
        x = f + self.o(a.transpose(1, 2).reshape(B, T, -1))
        n = self.ffn_norm(x)
        x = x + self.down(F.silu(self.gate(n)) * self.up(n))
        return self.prefix_norm(x)

    def head_logits(self, i, u):
        """u: [..., (i+2)H] -> draft logits [..., Vd] of head i."""
        return self.lm_head(self.norm(self.heads[i](u)))

    def ttt(self, f, ids, steps, detach=False):
        """Teacher-forced heads over a right-padded batch, in the trainer's step convention.

        f: [B, T, H] target final states; ids: [B, T]. Step k at index t reads [c_t | E(ids[t+1]) ..
        E(ids[t+1+k])] and predicts ids[t+2+k]. Returns `steps` logit tensors [B, T, Vd] (valid where
        t+1+k < T). detach is accepted for the trainer's signature (heads carry no features).
        """
        steps = min(steps, self.cfg.num_draft_heads)
        c = self.context(f)
        parts, out = [c], []
        for k in range(steps):
            e = F.embedding(F.pad(ids[:, 1 + k:], (0, 1 + k), value=0), self.embed).to(c.dtype)
            parts.append(e)
            out.append(self.head_logits(k, torch.cat(parts, -1)))
        return out

    def export_tensors(self) -> dict[str, torch.Tensor]:
        """Checkpoint name -> tensor (the C++ HydraDrafter's names), without d2t / t2d."""
        out = {PREFIX_NAMES[n]: getattr(self, n).weight for n in PREFIX_NAMES}
        for i, h in enumerate(self.heads):
            out[f"hydra.head.{i}.in"] = h.inp.weight
            for l, r in enumerate(h.res, 1):
                out[f"hydra.head.{i}.res.{l}"] = r.weight
        out["hydra.norm"] = self.norm.weight
        out["hydra.lm_head"] = self.lm_head.weight
        return out

    def load_tensors(self, tensors: dict[str, torch.Tensor]):
        """Inverse of export_tensors (shapes checked by load_state_dict's copy)."""
        with torch.no_grad():
            for name, p in self.export_tensors().items():
                if name not in tensors:
                    raise ValueError(f"[train] hydra checkpoint misses {name}")
                if tuple(tensors[name].shape) != tuple(p.shape):
                    raise ValueError(f"[train] hydra tensor {name} has shape {tuple(tensors[name].shape)}, "
                                     f"expected {tuple(p.shape)}")
                p.copy_(tensors[name].float())


def new_hydra(target, used, num_draft_heads=4, head_layers=2, intermediate=0) -> HydraDrafter:
    """A fresh Hydra drafter for a TorchTarget: prefix block of the target's attention shape with an FFN
    of `intermediate` (default the hidden size), lm_head and norm started from the target's output rows
    of the draft vocabulary and its output norm."""
    c = target.cfg
    cfg = HydraConfig(vocab_size=c.vocab_size, draft_vocab_size=len(used), hidden_size=c.hidden_size,
                      intermediate_size=intermediate or c.hidden_size, num_heads=c.num_heads, num_kv_heads=c.num_kv_heads,
                      head_dim=c.head_dim, rms_eps=c.rms_eps, rope_style=target.spec["rope_style"],
                      num_draft_heads=num_draft_heads, head_layers=head_layers)
    d = HydraDrafter(cfg, target.embed, target.rope_inv_freq)
    d.set_vocab(torch.as_tensor(used))
    with torch.no_grad():
        d.lm_head.weight.copy_(target.lm_head[d.draft_ids()])
        d.norm.weight.copy_(target.w("output_norm"))
    return d


def parameter_count(d: HydraDrafter) -> int:
    return sum(math.prod(p.shape) for p in d.parameters())


def save_hydra(d: HydraDrafter, out_dir, dtype="float16", extra=None):
    """Write config.json + model.safetensors (the engine's layout, eyas.drafters.hydra); returns the path."""
    from eyas.drafters.hydra import config_dict

    from .export import write_export

    return write_export(out_dir, d.export_tensors(), d, config_dict(d.cfg, dtype, extra), dtype)


def load_hydra(model_dir, target) -> HydraDrafter:
    """Reload an exported Hydra drafter for a TorchTarget (weights upcast to fp32)."""
    from pathlib import Path

    from eyas.drafters.checkpoint import read_checkpoint
    from eyas.drafters.hydra import parse_config

    config, tensors = read_checkpoint(Path(model_dir))
    d = HydraDrafter(parse_config(config), target.embed, target.rope_inv_freq)
    d.load_tensors({k: torch.from_numpy(np.array(t.numpy(), np.float32)) for k, t in tensors.items()
                    if k not in ("d2t", "t2d")})
    d.d2t.copy_(torch.from_numpy(np.array(tensors["d2t"].numpy(), np.int64)))
    d.t2d.copy_(torch.from_numpy(np.array(tensors["t2d"].numpy(), np.bool_)))
    return d.eval()
