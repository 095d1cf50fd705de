"""EAGLE-3 drafter in PyTorch (reference §3 semantics) with the training-time-test unroll (§6.1).

One Llama block whose q/k/v read concat(input_layernorm(embed(x)), hidden_norm(g)); g is
fc(aux) for target features or the previous step's pre-norm output. Weights use the HF layout
(rotate-half RoPE), as exported for SpecForge/vLLM. The token embedding is the target's, frozen
and never saved.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from eyas.models.common import rope_inv_freq

from .layers import apply_rope, rms_norm, rope_tables


@dataclass
class DrafterConfig:
    vocab_size: int
    draft_vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    target_hidden_size: int
    rms_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 8192
    aux_layers: list[int] = field(default_factory=list)

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class DraftVocab:
    """The draft vocabulary of a drafter module (EAGLE-3 and Hydra): d2t offsets and the t2d mask as
    buffers, exported beside the weights (reference §1.3). Needs `cfg.draft_vocab_size` and `cfg.vocab_size`."""

    def init_vocab(self):
        self.register_buffer("d2t", torch.zeros(self.cfg.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.ones(self.cfg.vocab_size, dtype=torch.bool))

    def set_vocab(self, used: torch.Tensor):
        """used: [Vd] ascending target ids of the draft vocab -> d2t offsets and t2d mask (§1.3)."""
        used = used.to(self.d2t.device).long()
        self.d2t.copy_(used - torch.arange(len(used), device=used.device))
        self.t2d.zero_()
        self.t2d[used] = True

    def draft_ids(self):
        """[Vd] target id of each draft index."""
        return self.d2t + torch.arange(self.cfg.draft_vocab_size, device=self.d2t.device)


def unrolled_attention(q, keys, vals, causal):
    """Attention of unrolled step k = len(keys) - 1. q: [B, nh, T, hd]; keys, vals: steps 0..k, each
    [B, nh, T, hd]; causal: bool [T, T]. Query t attends the step-0 keys s <= t and, of each later step,
    the key at t alone (the tree-inference pattern). One SDPA call over the steps' keys side by side with
    that mask, so the [B, nh, T, T] scores are never materialised (they were most of a long sequence's
    unroll and backward)."""
    if len(keys) == 1:
        return F.scaled_dot_product_attention(q, keys[0], vals[0], is_causal=True)
    own = torch.eye(causal.shape[0], dtype=torch.bool, device=causal.device)
    mask = torch.cat([causal] + [own] * (len(keys) - 1), 1)  # [T, (k + 1) T]
    return F.scaled_dot_product_attention(q, torch.cat(keys, 2), torch.cat(vals, 2), attn_mask=mask)


def unrolled_attention_reference(q, keys, vals, causal):
    """unrolled_attention written out, as the unroll computed it before: the scores over the step-0 keys
    <= t and each later step's key at t, one float32 softmax over both, then the weighted values. The
    reference its tests and `scripts/device/target_speed.py --training-step` compare with."""
    scale = q.shape[-1] ** -0.5
    s0 = ((q @ keys[0].transpose(-1, -2)) * scale).masked_fill(~causal, float("-inf"))
    own = [(q * kj).sum(-1, keepdim=True) * scale for kj in keys[1:]]
    p = torch.softmax(torch.cat([s0] + own, -1).float(), -1).to(q.dtype)
    T = q.shape[2]
    a = p[..., :T] @ vals[0]
    for j, vj in enumerate(vals[1:]):
        a = a + p[..., T + j, None] * vj
    return a


class Eagle3Drafter(DraftVocab, nn.Module):
    def __init__(self, cfg: DrafterConfig, embed: torch.Tensor):
        super().__init__()
        self.cfg = cfg
        H, I, hd = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
        self.fc = nn.Linear(3 * cfg.target_hidden_size, H, bias=False)
        self.hidden_norm = RMSNorm(H, cfg.rms_eps)
        self.input_layernorm = RMSNorm(H, cfg.rms_eps)
        self.q_proj = nn.Linear(2 * H, cfg.num_heads * hd, bias=False)
        self.k_proj = nn.Linear(2 * H, cfg.num_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(2 * H, cfg.num_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * hd, H, bias=False)
        self.post_attention_layernorm = RMSNorm(H, cfg.rms_eps)
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)
        self.norm = RMSNorm(H, cfg.rms_eps)
        self.lm_head = nn.Linear(H, cfg.draft_vocab_size, bias=False)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
        # Frozen target embedding [V, H] (buffer: excluded from the optimizer, dropped at export).
        self.register_buffer("embed", embed.detach().float().clone(), persistent=False)
        self.init_vocab()
        # The inverse frequencies the engine's drafter gets from the exported rope_theta.
        inv = torch.from_numpy(rope_inv_freq(cfg.rope_theta, hd))
        self.register_buffer("rope_inv_freq", inv, persistent=False)

    # Names in the exported (SpecForge / vLLM) checkpoint for each parameter here.
    EXPORT_NAMES = {
        "fc.weight": "fc.weight",
        "hidden_norm.weight": "midlayer.hidden_norm.weight",
        "input_layernorm.weight": "midlayer.input_layernorm.weight",
        "q_proj.weight": "midlayer.self_attn.q_proj.weight",
        "k_proj.weight": "midlayer.self_attn.k_proj.weight",
        "v_proj.weight": "midlayer.self_attn.v_proj.weight",
        "o_proj.weight": "midlayer.self_attn.o_proj.weight",
        "post_attention_layernorm.weight": "midlayer.post_attention_layernorm.weight",
        "gate_proj.weight": "midlayer.mlp.gate_proj.weight",
        "up_proj.weight": "midlayer.mlp.up_proj.weight",
        "down_proj.weight": "midlayer.mlp.down_proj.weight",
        "norm.weight": "norm.weight",
        "lm_head.weight": "lm_head.weight",
    }

    def project(self, g, ids, pos):
        """First half of the block. g: [..., T, H or 3Ht]; ids: [..., T]; pos: [..., T].

        Returns residual [..., T, H], q [..., T, nh, hd], k/v [..., T, nkv, hd] (RoPE applied).
        """
        c = self.cfg
        if g.shape[-1] != c.hidden_size:  # target aux features -> fc; draft features pass through
            g = self.fc(g)
        e = F.embedding(ids, self.embed).to(g.dtype)
        u = torch.cat((self.input_layernorm(e), self.hidden_norm(g)), -1)
        shp = u.shape[:-1]
        cos, sin = rope_tables(pos, self.rope_inv_freq)
        q = apply_rope(self.q_proj(u).view(*shp, c.num_heads, c.head_dim), cos, sin, "neox")
        k = apply_rope(self.k_proj(u).view(*shp, c.num_kv_heads, c.head_dim), cos, sin, "neox")
        v = self.v_proj(u).view(*shp, c.num_kv_heads, c.head_dim)
        return g, q, k, v

    def finish(self, residual, attn):
        """Second half. attn: [..., T, nh*hd] -> (pre-norm output h [..., T, H], draft logits [..., T, Vd])."""
        h1 = residual + self.o_proj(attn)
        n = self.post_attention_layernorm(h1)
        h2 = h1 + self.down_proj(F.silu(self.gate_proj(n)) * self.up_proj(n))
        return h2, self.lm_head(self.norm(h2))

    def ttt(self, aux, ids, steps, detach=False):
        """Training-time test unroll over a right-padded batch.

        aux: [B, T, 3Ht] target aux states; ids: [B, T] target ids. Step k at index t reads token
        ids[t+1+k] at RoPE position t+k and attends step-0 keys <= t plus steps 1..k at index t.
        detach=True cuts the gradient through the carried features (HASS context alignment).
        Returns a list of `steps` draft logit tensors [B, T, Vd] (valid where t+1+k < T).
        """
        c = self.cfg
        B, T = ids.shape
        rep = c.num_heads // c.num_kv_heads
        base = torch.arange(T, device=ids.device)
        causal = base[None, :] <= base[:, None]  # [T, T] query t sees key s <= t
        g = aux
        keys, vals, out = [], [], []
        for k in range(steps):
            ids_k = F.pad(ids[:, 1 + k:], (0, 1 + k), value=0)  # token x_{t+1+k}
            pos = (base + k).expand(B, T)
            g, q, kk, vv = self.project(g, ids_k, pos)
            keys.append(kk.transpose(1, 2).repeat_interleave(rep, 1))  # [B, nh, T, hd]
            vals.append(vv.transpose(1, 2).repeat_interleave(rep, 1))
            a = unrolled_attention(q.transpose(1, 2), keys, vals, causal)
            h, logits = self.finish(g, a.transpose(1, 2).reshape(B, T, -1))
            out.append(logits)
            g = h.detach() if detach else h
        return out
