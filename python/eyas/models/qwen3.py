"""Qwen3: per-head RMSNorm on q and k before rope; optional gated attention output (Qwen3.5 class)."""

from eyas.models import base

HF_MODEL_TYPES = ("qwen3",)
GGUF_ARCHS = ("qwen3",)


def spec_from_hf(config: dict) -> dict:
    return base.from_hf(config, "qwen3", qk_norm=True, qkv_bias=bool(config.get("attention_bias", False)))


def spec_from_gguf(meta: dict, weights: dict, gguf_arch: str) -> dict:
    return base.from_gguf(meta, weights, gguf_arch, "qwen3", "neox", qk_norm=True,
                          qkv_bias="blk.0.attn_q.bias" in weights)
