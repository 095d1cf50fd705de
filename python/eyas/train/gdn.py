"""Gated DeltaNet mixer of the training target (reference/qwen35_hybrid.md §3b), in torch over eyas's
canonical weights: the token-sequential delta rule in float32, as the runtime computes it (slow for
long sequences: one step per token). Padded positions (left padding of a batch) leave the conv
window and the recurrent state untouched, so a padded row computes what it would alone."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .layers import rms_norm


def gdn_mixer(w, p: str, h, g: dict, rms_eps: float, valid=None, cache: dict | None = None):
    """The mixer's output [B, T, H] (to add to the residual stream).

    w(name): a weight; p: "blk.{i}."; h: [B, T, H] the normed input; g: the spec's "gdn" sizes;
    valid: [B, T] bool (False = padding) or None; cache: None (a fresh sequence) or a dict that holds
    and receives the state after these tokens: "conv" [B, K-1, C] raw inputs, "S" [B, Hv, Dk, Dv]."""
    B, T, _ = h.shape
    hk, dk, hv, dv, K = g["num_k_heads"], g["k_head_dim"], g["num_v_heads"], g["v_head_dim"], g["conv_kernel"]
    u = (h @ w(p + "attn_qkv").T).float()  # [B, T, C] before the conv
    z = (h @ w(p + "attn_gate").T).float().view(B, T, hv, dv)
    b, a = (h @ w(p + "ssm_beta").T).float(), (h @ w(p + "ssm_alpha").T).float()  # [B, T, Hv]
    if valid is not None:
        u = u * valid[..., None]
    C = u.shape[-1]
    prev = cache["conv"] if cache and "conv" in cache else u.new_zeros(B, K - 1, C)
    seq = torch.cat([prev, u], 1)  # [B, K-1+T, C]; tap K-1 is the current row
    cw = w(p + "ssm_conv1d").float()  # [C, K]
    c = F.silu(sum(seq[:, j : j + T] * cw[:, j] for j in range(K)))
    q, k, v = c.split([hk * dk, hk * dk, hv * dv], -1)
    eps = float(g.get("l2_eps", 1e-6))
    q = q.reshape(B, T, hk, dk)
    k = k.reshape(B, T, hk, dk)
    q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + eps) * dk ** -0.5
    k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + eps)
    heads = torch.arange(hv, device=h.device)
    kh = heads % hk if g.get("tiled_heads") else heads // (hv // hk)  # key head of each value head
    q, k, v = q[:, :, kh], k[:, :, kh], v.reshape(B, T, hv, dv)
    beta = torch.sigmoid(b)
    alpha = torch.exp(w(p + "ssm_a").float() * F.softplus(a + w(p + "ssm_dt.bias").float()))
    if valid is not None:  # padding: no decay, no write
        beta, alpha = beta * valid[..., None], torch.where(valid[..., None], alpha, torch.ones_like(alpha))
    S = cache["S"] if cache and "S" in cache else u.new_zeros(B, hv, dk, dv)
    outs = []
    for t in range(T):
        S = S * alpha[:, t, :, None, None]
        delta = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t]))
        S = S + k[:, t, :, :, None] * delta[:, :, None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", S, q[:, t]))
    if cache is not None:
        cache["conv"], cache["S"] = seq[:, -(K - 1):], S
    o = rms_norm(torch.stack(outs, 1), w(p + "ssm_norm"), rms_eps) * F.silu(z)
    return o.reshape(B, T, hv * dv).to(h.dtype) @ w(p + "ssm_out").T
