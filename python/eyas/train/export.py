"""Export / reload a drafter in the SpecForge / vLLM EAGLE-3 layout (reference §1).

config.json: ``architectures: ["LlamaForCausalLMEagle3"]``, ``draft_vocab_size``,
``eagle_config.eagle_aux_hidden_state_layer_ids`` (input-of-layer ids). model.safetensors:
``fc.weight``, ``midlayer.*``, ``norm.weight``, ``lm_head.weight``, ``d2t`` (int64 offsets),
``t2d`` (bool); no ``embed_tokens`` (the target's is shared).
"""

from __future__ import annotations

import json
import os

import numpy as np
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


def write_export(out_dir, weights: dict, drafter, config: dict, dtype: str):
    """out_dir/model.safetensors (weights {checkpoint name: tensor} cast to `dtype`, plus the drafter's
    d2t / t2d) and out_dir/config.json; returns the safetensors path. Shared by every drafter family."""
    from safetensors.torch import save_file

    if dtype not in DTYPES:
        raise ValueError(f"[train] export dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    os.makedirs(out_dir, exist_ok=True)
    tensors = {}
    for name, w in weights.items():
        w = w.detach().float()
        if dtype == "float16" and float(w.abs().max()) > 65000:
            raise ValueError(f"[train] {name} overflows float16; export as bfloat16")
        tensors[name] = w.to(DTYPES[dtype]).contiguous().cpu()
    tensors["d2t"] = drafter.d2t.long().contiguous().cpu()
    tensors["t2d"] = drafter.t2d.bool().contiguous().cpu()
    path = os.path.join(out_dir, "model.safetensors")
    save_file(tensors, path, metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    return path


def save_drafter(drafter: Eagle3Drafter, out_dir, dtype="float16", extra=None):
    """Write config.json + model.safetensors; returns the safetensors path."""
    sd = drafter.state_dict()
    weights = {theirs: sd[ours] for ours, theirs in Eagle3Drafter.EXPORT_NAMES.items()}
    return write_export(out_dir, weights, drafter, hf_config(drafter.cfg, dtype, extra), dtype)


def config_from_hf(hf: dict) -> DrafterConfig:
    """Training config of an exported drafter's config.json, read by the engine's parser
    (eyas.drafters.eagle3.parse_config) so both sides read the same fields the same way."""
    from eyas.drafters.eagle3 import parse_config

    c = parse_config(hf)
    if c.norm_before_residual or not c.norm_output:
        raise ValueError("[train] only drafters with norm_before_residual=false and norm_output=true can be trained")
    if c.vocab_size is None or c.aux_layers is None or len(c.aux_layers) != 3:
        raise ValueError("[train] the drafter config must name vocab_size and three eagle_aux_hidden_state_layer_ids")
    return DrafterConfig(
        vocab_size=c.vocab_size, draft_vocab_size=c.draft_vocab_size or c.vocab_size, hidden_size=c.hidden_size,
        intermediate_size=c.intermediate_size, num_heads=c.num_heads, num_kv_heads=c.num_kv_heads,
        head_dim=c.head_dim, target_hidden_size=c.target_hidden_size or c.hidden_size, rms_eps=c.rms_eps,
        rope_theta=c.rope_theta, max_position_embeddings=hf.get("max_position_embeddings", 8192),
        aux_layers=list(c.aux_layers),
    )


def load_drafter(model_dir, embed: torch.Tensor) -> Eagle3Drafter:
    """Reload an exported drafter (weights upcast to fp32); embed: the target embedding [V, H]."""
    from pathlib import Path

    from eyas.drafters.checkpoint import read_checkpoint

    config, tensors = read_checkpoint(Path(model_dir))
    d = Eagle3Drafter(config_from_hf(config), embed)
    sd = {ours: torch.from_numpy(np.array(tensors[theirs].numpy(), np.float32))
          for ours, theirs in Eagle3Drafter.EXPORT_NAMES.items()}
    sd["d2t"] = torch.from_numpy(np.array(tensors["d2t"].numpy(), np.int64))
    sd["t2d"] = torch.from_numpy(np.array(tensors["t2d"].numpy(), np.bool_))
    d.load_state_dict(sd)
    return d.eval()
