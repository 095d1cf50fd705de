"""Architectures: one module per family maps config + tensor names to the runtime spec."""

from __future__ import annotations

from types import ModuleType

from eyas.models import llama, qwen2, qwen3, qwen3_moe, qwen35

_MODULES: tuple[ModuleType, ...] = (llama, qwen2, qwen3, qwen3_moe, qwen35)
HF_REGISTRY = {t: m for m in _MODULES for t in m.HF_MODEL_TYPES}
GGUF_REGISTRY = {a: m for m in _MODULES for a in m.GGUF_ARCHS}


def for_hf(model_type: str | None) -> ModuleType:
    if model_type not in HF_REGISTRY:
        raise ValueError(f"[model] unsupported model_type {model_type!r} in config.json "
                         f"(supported: {', '.join(sorted(HF_REGISTRY))})")
    return HF_REGISTRY[model_type]


def for_gguf(arch: str | None) -> ModuleType:
    if arch not in GGUF_REGISTRY:
        raise ValueError(f"[model] unsupported GGUF architecture {arch!r} "
                         f"(supported: {', '.join(sorted(GGUF_REGISTRY))})")
    return GGUF_REGISTRY[arch]
