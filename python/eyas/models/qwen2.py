"""Qwen2: Llama with biases on the Q/K/V projections."""

from eyas.models import base

HF_MODEL_TYPES = ("qwen2",)
GGUF_ARCHS = ("qwen2",)


def spec_from_hf(config: dict) -> dict:
    return base.from_hf(config, "qwen2", qkv_bias=True)


def spec_from_gguf(meta: dict, weights: dict, gguf_arch: str) -> dict:
    return base.from_gguf(meta, weights, gguf_arch, "qwen2", "neox", qkv_bias=True)
