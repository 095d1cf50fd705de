"""Llama (SmolLM2, Llama 2/3 incl. llama3 and linear rope scaling)."""

from eyas.models import base

HF_MODEL_TYPES = ("llama",)
GGUF_ARCHS = ("llama",)


def spec_from_hf(config: dict) -> dict:
    return base.from_hf(config, "llama", qkv_bias=bool(config.get("attention_bias", False)))


def spec_from_gguf(meta: dict, weights: dict, gguf_arch: str) -> dict:
    # llama.cpp's converter permutes Q/K rows so that rope rotates adjacent pairs.
    return base.from_gguf(meta, weights, gguf_arch, "llama", "interleaved", qkv_bias="blk.0.attn_q.bias" in weights)
