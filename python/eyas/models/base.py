"""Config readers shared by the dense architectures: HF config.json and GGUF metadata -> spec fields."""

from __future__ import annotations

from typing import Any

import numpy as np

from eyas.models.common import base_spec, bounded, fail, hf_int, hf_rope, positive_float, rope_inv_freq


def from_hf(config: dict, arch: str, **flags: Any) -> dict:
    act = config.get("hidden_act", config.get("hidden_activation", "silu"))
    if act != "silu":
        fail(f"config.json: hidden_act {act!r} is not supported (only 'silu')")
    if config.get("mlp_bias"):
        fail("config.json: mlp_bias=true is not supported")
    H = hf_int(config, "hidden_size")
    Hq = hf_int(config, "num_attention_heads")
    Hkv = hf_int(config, "num_key_value_heads", Hq) if config.get("num_key_value_heads") is not None else Hq
    D = hf_int(config, "head_dim") if config.get("head_dim") is not None else H // Hq
    rot_dim = int(D * float(config.get("partial_rotary_factor", 1.0)))
    theta, scaling = hf_rope(config)
    spec = base_spec(
        arch,
        vocab_size=hf_int(config, "vocab_size"), hidden_size=H, num_layers=hf_int(config, "num_hidden_layers"),
        num_heads=Hq, num_kv_heads=Hkv, head_dim=int(D),
        intermediate_size=int(config.get("intermediate_size") or 0),
        rms_eps=positive_float("rms_norm_eps", config.get("rms_norm_eps", 1e-6), allow_zero=True),
        rope_style="neox", rot_dim=rot_dim,
        tie_embeddings=bool(config.get("tie_word_embeddings", False)),
        attn_output_gate=bool(config.get("attn_output_gate", False)),
        **flags,
    )
    spec["rope_inv_freq"] = rope_inv_freq(theta, rot_dim, scaling)
    spec["rope_theta"] = theta  # popped by the loaders like context_length: drafters are configured by it
    spec["context_length"] = int(config.get("max_position_embeddings") or 0)
    return spec


def meta_int(meta: dict, key: str, default: Any = None) -> int:
    v = meta.get(key, default)
    if v is None:
        fail(f"GGUF metadata key {key!r} is missing")
    if isinstance(v, (list, np.ndarray)):
        fail(f"GGUF metadata key {key!r}: per-layer values are not supported")
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        fail(f"GGUF metadata key {key!r} must be an integer, got {v!r}")
    return bounded(key, int(v))


def meta_float(meta: dict, key: str, default: float, *, allow_zero: bool = False) -> float:
    return positive_float(f"GGUF metadata key {key!r}", meta.get(key, default), allow_zero=allow_zero)


def from_gguf(meta: dict, weights: dict, gguf_arch: str, arch: str, rope_style: str, **flags: Any) -> dict:
    k = gguf_arch + "."
    H = meta_int(meta, k + "embedding_length")
    Hq = meta_int(meta, k + "attention.head_count")
    if Hq < 1:
        fail(f"GGUF metadata key {k + 'attention.head_count'!r} must be positive, got {Hq}")
    Hkv = meta_int(meta, k + "attention.head_count_kv", Hq)
    D = meta_int(meta, k + "attention.key_length", H // Hq)
    rot_dim = meta_int(meta, k + "rope.dimension_count", D)
    if "token_embd" not in weights:
        fail("tensor 'token_embd' is missing")
    q = weights.get("blk.0.attn_q")
    gated = q is not None and q[2][0] == 2 * Hq * D
    scaling = None
    stype = meta.get(k + "rope.scaling.type", "none")
    if stype not in ("none", None):
        scaling = {"rope_type": stype, "factor": meta.get(k + "rope.scaling.factor", 1.0)}
    freq_factors = None
    if "rope_freqs" in weights:  # llama3-style scaling is stored as per-frequency divisors
        freq_factors = np.asarray(weights.pop("rope_freqs")[0], dtype=np.float32)
    spec = base_spec(
        arch,
        vocab_size=int(weights["token_embd"][2][0]), hidden_size=H, num_layers=meta_int(meta, k + "block_count"),
        num_heads=Hq, num_kv_heads=Hkv, head_dim=D,
        intermediate_size=meta_int(meta, k + "feed_forward_length", 0),
        rms_eps=meta_float(meta, k + "attention.layer_norm_rms_epsilon", 1e-5, allow_zero=True),
        rope_style=rope_style, rot_dim=rot_dim, tie_embeddings="output" not in weights, attn_output_gate=gated,
        **flags,
    )
    spec["rope_theta"] = meta_float(meta, k + "rope.freq_base", 10000.0)
    spec["rope_inv_freq"] = rope_inv_freq(spec["rope_theta"], rot_dim, scaling, freq_factors)
    spec["context_length"] = meta_int(meta, k + "context_length", 0)
    return spec
