"""Qwen3.5 and Qwen3-Next hybrids (reference/qwen35_hybrid.md): Gated DeltaNet ("gdn") mixers with gated full
attention every `full_attention_interval`-th block, (1 + w) RMSNorms, partial rope (IMROPE, which for
text is plain partial NeoX rope), dense or MoE FFNs (shared expert with a sigmoid gate, top-k always
renormalised).

Canonical weights follow llama.cpp's GGUF: norms hold 1 + w, ssm_a holds -exp(A_log), the conv is
[C, K] in F32. Value heads: HF's grouped order, or the tiled order of a qwen35/qwen35moe GGUF, which
the runtime reads as it is (spec.gdn.tiled_heads). Qwen3-Next fuses q|k|v|z and b|a per key-head
group; they are regrouped into the Qwen3.5 tensors here.
"""

from __future__ import annotations

import numpy as np

from eyas.models import base
from eyas.models.common import fail, hf_int, keep_mtp_blocks

HF_MODEL_TYPES = ("qwen3_5_text", "qwen3_5", "qwen3_5_moe_text", "qwen3_5_moe", "qwen3_next")
GGUF_ARCHS = ("qwen35", "qwen35moe", "qwen3next")

_F32 = 0  # the GGML type id of float32 weights (eyas.loaders.dtypes.F32; models sit below the loaders)

# Norms stored as w with the model computing x * (1 + w); llama.cpp's converter stores 1 + w. The last
# three are the multi-token-prediction block's (nextn.*).
_ONE_PLUS_W = ("attn_norm", "ffn_norm", "output_norm", "attn_q_norm", "attn_k_norm", "enorm", "hnorm",
               "shared_head_norm")


def text_config(config: dict) -> dict:
    """The text model's fields: composite checkpoints (Qwen3_5ForConditionalGeneration) nest them
    under text_config; the vision tower is ignored."""
    if "text_config" not in config:
        return config
    text = dict(config["text_config"] or {})
    for key in ("tie_word_embeddings",):
        if key in config and key not in text:
            text[key] = config[key]
    text["model_type"] = config.get("model_type", "") + "_text"
    return text


def _mixers(num_layers: int, layer_types: list | None, interval: int) -> list[str]:
    if layer_types is None:
        if interval < 1:
            fail(f"full_attention_interval must be >= 1, got {interval}")
        layer_types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(num_layers)]
    if len(layer_types) != num_layers:
        fail(f"layer_types lists {len(layer_types)} layers, num_hidden_layers is {num_layers}")
    kinds = {"linear_attention": "gdn", "full_attention": "attention"}
    for t in layer_types:
        if t not in kinds:
            fail(f"layer type {t!r} is not supported (linear_attention, full_attention)")
    return [kinds[t] for t in layer_types]


def spec_from_hf(config: dict) -> dict:
    cfg = dict(text_config(config))
    params = cfg.get("rope_parameters") or {}
    # transformers 5 keeps partial_rotary_factor inside rope_parameters.
    cfg.setdefault("partial_rotary_factor", params.get("partial_rotary_factor", 0.25))
    cfg["attn_output_gate"] = True  # q_proj gives [query | gate] per head
    L = hf_int(cfg, "num_hidden_layers")
    mixers = _mixers(L, cfg.get("layer_types"), int(cfg.get("full_attention_interval") or 4))
    model_type = cfg.get("model_type", "")
    nxt = model_type == "qwen3_next"
    is_moe = nxt or model_type.startswith("qwen3_5_moe")
    moe, ffns = None, ["dense_ffn"] * L
    if is_moe:
        Is = int(cfg.get("shared_expert_intermediate_size") or 0)
        moe = {"num_experts": hf_int(cfg, "num_experts"), "top_k": hf_int(cfg, "num_experts_per_tok"),
               # Qwen3.5-MoE always renormalises the top-k; Qwen3-Next if norm_topk_prob (default true)
               "norm_topk_prob": bool(cfg.get("norm_topk_prob", True)) if nxt else True,
               "expert_intermediate_size": hf_int(cfg, "moe_intermediate_size"),
               "shared_expert_intermediate_size": Is, "shared_expert_gate": Is > 0}
        # As transformers builds Qwen3-Next's blocks: MoE unless in mlp_only_layers or off the sparse step.
        step, dense = int(cfg.get("decoder_sparse_step") or 1), set(cfg.get("mlp_only_layers") or ())
        ffns = ["dense_ffn" if nxt and (i in dense or (i + 1) % step) else "moe_ffn" for i in range(L)]
    gdn = {"num_k_heads": hf_int(cfg, "linear_num_key_heads"), "num_v_heads": hf_int(cfg, "linear_num_value_heads"),
           "k_head_dim": hf_int(cfg, "linear_key_head_dim"), "v_head_dim": hf_int(cfg, "linear_value_head_dim"),
           "conv_kernel": hf_int(cfg, "linear_conv_kernel_dim"), "l2_eps": 1e-6}
    if gdn["num_v_heads"] % gdn["num_k_heads"]:
        fail(f"linear_num_value_heads {gdn['num_v_heads']} is not a multiple of "
             f"linear_num_key_heads {gdn['num_k_heads']}")
    layers = [{"mixer": m, "ffn": f} for m, f in zip(mixers, ffns)]
    arch = "qwen3next" if nxt else "qwen35moe" if is_moe else "qwen35"
    return base.from_hf(cfg, arch, qk_norm=True,
                        qkv_bias=bool(cfg.get("attention_bias", False)), moe=moe, layers=layers, gdn=gdn)


def adapt_hf_weights(weights: dict, spec: dict, as_f32) -> None:
    """HF tensors -> the canonical (GGUF) conventions, in place: 1 + w norms (in float32, as transformers
    computes 1.0 + w.float()), ssm_a = -exp(A_log), the conv squeezed to F32 [C, K].
    as_f32(weight, shape): the loader's float32 copy of a (array, dtype, shape) weight, reshaped."""
    split_fused_gdn(weights, spec["gdn"])
    for name, w in list(weights.items()):
        suffix = name.rsplit(".", 1)[-1] if name.startswith("blk.") else name
        if suffix in _ONE_PLUS_W:
            weights[name] = as_f32(w, w[2], lambda x: np.float32(1.0) + x)
        elif suffix == "ssm_a":  # holds A_log until here
            weights[name] = as_f32(w, w[2], lambda x: -np.exp(x))
        elif suffix == "ssm_conv1d":
            shape = list(w[2])
            if len(shape) != 3 or shape[1] != 1:
                fail(f"{name}: conv1d weight must be [C, 1, K], got {shape}")
            weights[name] = as_f32(w, [shape[0], shape[2]])


def _gguf_mixers(meta: dict, k: str, L: int) -> list[str]:
    recurrent = meta.get(k + "attention.recurrent_layers")
    if recurrent is not None:
        flags = [bool(x) for x in recurrent]
        if len(flags) < L:
            fail(f"{k}attention.recurrent_layers lists {len(flags)} layers, the model has {L}")
        return ["gdn" if flags[i] else "attention" for i in range(L)]
    return _mixers(L, None, base.meta_int(meta, k + "full_attention_interval", 4))


def _adapt_gguf_weights(weights: dict) -> None:
    """llama.cpp's names -> the canonical ones, in place: post_attention_norm is the FFN's norm, the
    shared-expert gate [H] is one row [1, H]."""
    for name in list(weights):
        if name.endswith(".post_attention_norm"):
            weights[name[: -len("post_attention_norm")] + "ffn_norm"] = weights.pop(name)
        elif name.endswith(".ffn_gate_inp_shexp") and len(weights[name][2]) == 1:
            arr, dt, shape = weights[name]
            weights[name] = (arr.reshape(1, -1) if dt == _F32 else arr, dt, [1, shape[0]])


def spec_from_gguf(meta: dict, weights: dict, gguf_arch: str) -> dict:
    k = gguf_arch + "."
    # GGUFs exported with MTP heads count them in block_count (llama.cpp: n_layer - nextn_predict_layers).
    L = base.meta_int(meta, k + "block_count") - base.meta_int(meta, k + "nextn_predict_layers", 0)
    if L < 1:
        fail(f"{k}block_count leaves no trunk layers")
    mtp = keep_mtp_blocks(weights, L)
    _adapt_gguf_weights(weights)
    nxt = gguf_arch == "qwen3next"
    is_moe = nxt or gguf_arch == "qwen35moe"
    moe = None
    if is_moe:
        Is = base.meta_int(meta, k + "expert_shared_feed_forward_length", 0)
        moe = {"num_experts": base.meta_int(meta, k + "expert_count"),
               "top_k": base.meta_int(meta, k + "expert_used_count"),
               "norm_topk_prob": True,  # llama.cpp: always for qwen35moe and qwen3next (no key in the file)
               "expert_intermediate_size": base.meta_int(meta, k + "expert_feed_forward_length"),
               "shared_expert_intermediate_size": Is, "shared_expert_gate": Is > 0}
    Hv, inner = base.meta_int(meta, k + "ssm.time_step_rank"), base.meta_int(meta, k + "ssm.inner_size")
    if Hv < 1 or inner % Hv:
        fail(f"{k}ssm.inner_size {inner} is not a multiple of ssm.time_step_rank {Hv}")
    rms_eps = float(meta.get(k + "attention.layer_norm_rms_epsilon", 1e-6))
    gdn = {"num_k_heads": base.meta_int(meta, k + "ssm.group_count"), "num_v_heads": Hv,
           "k_head_dim": base.meta_int(meta, k + "ssm.state_size"), "v_head_dim": inner // Hv,
           "conv_kernel": base.meta_int(meta, k + "ssm.conv_kernel"),
           "l2_eps": rms_eps,  # llama.cpp's l2-norm epsilon
           # qwen35*: the converter tiles the value heads; qwen3next keeps them grouped
           "tiled_heads": not nxt}
    if nxt:
        split_fused_gdn(weights, gdn)  # ssm_ba stays fused in a qwen3next GGUF
    ffns = ["moe_ffn" if is_moe and f"blk.{i}.ffn_gate_inp" in weights else "dense_ffn" for i in range(L)]
    layers = [{"mixer": m, "ffn": f} for m, f in zip(_gguf_mixers(meta, k, L), ffns)]
    spec = base.from_gguf(meta, weights, gguf_arch, gguf_arch, "neox", qk_norm=True, qkv_bias=False, moe=moe,
                          layers=layers, gdn=gdn)
    spec["num_layers"] = L
    spec["mtp_layers"] = mtp
    # Text positions are equal in all IMROPE streams, so rope.dimension_sections changes nothing here.
    spec["attn_output_gate"] = True
    first = next((i for i, b in enumerate(layers) if b["mixer"] == "attention"), None)
    q = weights.get(f"blk.{first}.attn_q") if first is not None else None
    if q is not None and q[2][0] != 2 * spec["num_heads"] * spec["head_dim"]:
        fail(f"blk.{first}.attn_q must hold [query | gate] per head (2 * head_count * key_length rows), "
             f"got {q[2][0]}")
    return spec


def _rows(w: tuple, idx: np.ndarray) -> tuple:
    """Rows idx of a 2-D weight, any type (raw rows of quantized ones are whole blocks)."""
    arr, dt, shape = w
    part = np.ascontiguousarray(arr.reshape(shape[0], -1)[idx])
    return (part.reshape(len(idx), *shape[1:]) if dt == _F32 else part, dt, [len(idx), *shape[1:]])


def split_fused_gdn(weights: dict, g: dict) -> None:
    """Qwen3-Next's fused projections, laid out per key-head group g, into the Qwen3.5 tensors (in place):
    attn_qkvz rows [q_g (Dk) | k_g (Dk) | v_g (r*Dv) | z_g (r*Dv)] -> attn_qkv [all q | all k | all v] and
    attn_gate [all z]; ssm_ba rows [b_g (r) | a_g (r)] -> ssm_beta, ssm_alpha (value heads stay grouped)."""
    hk, dk, r, dv = g["num_k_heads"], g["k_head_dim"], g["num_v_heads"] // g["num_k_heads"], g["v_head_dim"]
    block = 2 * dk + 2 * r * dv
    for name in [n for n in weights if n.endswith(".attn_qkvz") or n.endswith(".ssm_ba")]:
        p, w = name.rsplit(".", 1)[0] + ".", weights.pop(name)
        if name.endswith(".ssm_ba"):
            if w[2][0] != 2 * r * hk:
                fail(f"{name}: expected {2 * r * hk} rows, got {w[2][0]}")
            weights[p + "ssm_beta"] = _rows(w, np.array([gi * 2 * r + j for gi in range(hk) for j in range(r)]))
            weights[p + "ssm_alpha"] = _rows(w, np.array([gi * 2 * r + r + j for gi in range(hk) for j in range(r)]))
            continue
        if w[2][0] != hk * block:
            fail(f"{name}: expected {hk * block} rows, got {w[2][0]}")
        q = [gi * block + i for gi in range(hk) for i in range(dk)]
        k = [gi * block + dk + i for gi in range(hk) for i in range(dk)]
        v = [gi * block + 2 * dk + i for gi in range(hk) for i in range(r * dv)]
        z = [gi * block + 2 * dk + r * dv + i for gi in range(hk) for i in range(r * dv)]
        weights[p + "attn_qkv"] = _rows(w, np.array(q + k + v))
        weights[p + "attn_gate"] = _rows(w, np.array(z))
