"""Export / reload a drafter in the SpecForge / vLLM EAGLE-3 layout (reference §1).

config.json: ``architectures: ["LlamaForCausalLMEagle3"]``, ``draft_vocab_size``,
``eagle_config.eagle_aux_hidden_state_layer_ids`` (input-of-layer ids). model.safetensors:
``fc.weight``, ``midlayer.*``, ``norm.weight``, ``lm_head.weight``, ``d2t`` (int64 offsets),
``t2d`` (bool); no ``embed_tokens`` (the target's is shared).
"""

from __future__ import annotations

import json
import os

import torch

from .drafter import DrafterConfig, Eagle3Drafter

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def hf_config(cfg: DrafterConfig, dtype: str, extra=None):
    out = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": cfg.rms_eps,
        "rope_theta": cfg.rope_theta,
        "rope_scaling": None,
        "max_position_embeddings": cfg.max_position_embeddings,
        "tie_word_embeddings": False,
        "bias": False,
        "vocab_size": cfg.vocab_size,
        "draft_vocab_size": cfg.draft_vocab_size,
        "torch_dtype": dtype,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(cfg.aux_layers), "use_aux_hidden_state": True},
    }
    if cfg.target_hidden_size != cfg.hidden_size:
        # Only written when it differs: its presence tells EAGLE the draft has its own embedding.
        out["target_hidden_size"] = cfg.target_hidden_size
    if extra:
        out["eyas"] = extra
    return out


def save_drafter(drafter: Eagle3Drafter, out_dir, dtype="float16", extra=None):
    """Write config.json + model.safetensors; returns the safetensors path."""
    from safetensors.torch import save_file

    if dtype not in DTYPES:
        raise ValueError(f"[train] export dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    os.makedirs(out_dir, exist_ok=True)
    sd = drafter.state_dict()
    tensors = {}
    for ours, theirs in Eagle3Drafter.EXPORT_NAMES.items():
        w = sd[ours].detach().float()
        if dtype == "float16" and float(w.abs().max()) > 65000:
            raise ValueError(f"[train] {theirs} overflows float16; export as bfloat16")
        tensors[theirs] = w.to(DTYPES[dtype]).contiguous().cpu()
    tensors["d2t"] = sd["d2t"].long().contiguous().cpu()
    tensors["t2d"] = sd["t2d"].bool().contiguous().cpu()
    path = os.path.join(out_dir, "model.safetensors")
    save_file(tensors, path, metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(drafter.cfg, dtype, extra), f, indent=2)
        f.write("\n")
    return path


def config_from_hf(hf: dict) -> DrafterConfig:
    if hf.get("num_hidden_layers", 1) != 1:
        raise ValueError("[train] only 1-layer EAGLE-3 drafters are supported")
    H = hf["hidden_size"]
    nh = hf["num_attention_heads"]
    return DrafterConfig(
        vocab_size=hf["vocab_size"],
        draft_vocab_size=hf.get("draft_vocab_size", hf["vocab_size"]),
        hidden_size=H,
        intermediate_size=hf["intermediate_size"],
        num_heads=nh,
        num_kv_heads=hf.get("num_key_value_heads", nh),
        head_dim=hf.get("head_dim") or H // nh,
        target_hidden_size=hf.get("target_hidden_size", H),
        rms_eps=hf.get("rms_norm_eps", 1e-5),
        rope_theta=hf.get("rope_theta", 10000.0),
        max_position_embeddings=hf.get("max_position_embeddings", 8192),
        aux_layers=list((hf.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids", [])),
    )


def load_drafter(model_dir, embed: torch.Tensor) -> Eagle3Drafter:
    """Reload an exported drafter (weights upcast to fp32); embed: the target embedding [V, H]."""
    from safetensors.torch import load_file

    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = config_from_hf(json.load(f))
    tensors = load_file(os.path.join(model_dir, "model.safetensors"))
    d = Eagle3Drafter(cfg, embed)
    sd = {ours: tensors[theirs].float() for ours, theirs in Eagle3Drafter.EXPORT_NAMES.items()}
    sd["d2t"], sd["t2d"] = tensors["d2t"].long(), tensors["t2d"].bool()
    d.load_state_dict(sd)
    return d.eval()
