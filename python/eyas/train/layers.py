"""Torch pieces the training target and the drafter share: RMSNorm and rotary embedding."""

from __future__ import annotations

import torch


def rms_norm(x, w, eps):
    # fp32 statistics even under autocast, as the engine computes them.
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float()).to(x.dtype)


def rope_tables(pos, inv_freq):
    """pos: [..., T] int; inv_freq: F32[rot/2] (the spec's rope_inv_freq) -> (cos, sin) each [..., T, 1, rot/2]."""
    ang = pos.float()[..., None] * inv_freq
    return ang.cos()[..., None, :], ang.sin()[..., None, :]


def apply_rope(x, cos, sin, style):
    """x: [..., T, heads, D]; rotates the first rot = 2 * cos.shape[-1] dims of each head.

    "interleaved" rotates pairs (2i, 2i+1) (GGUF llama layout), "neox" pairs (i, i + rot/2) (HF layout)."""
    rot = 2 * cos.shape[-1]
    xf, rest = x[..., :rot].float(), x[..., rot:]
    if style == "interleaved":
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)
    else:
        a, b = xf[..., : rot // 2], xf[..., rot // 2:]
        out = torch.cat((a * cos - b * sin, a * sin + b * cos), -1)
    return torch.cat((out.to(x.dtype), rest), -1)
