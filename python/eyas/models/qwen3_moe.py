"""Qwen3-MoE (router top-k, norm_topk_prob) and Qwen2-MoE (QKV bias, gated shared expert).

Both map to the runtime's "qwen3_moe" arch; the attention flags say which attention it runs.
"""

from eyas.models import base
from eyas.models.common import hf_int, layer_kinds

HF_MODEL_TYPES = ("qwen3_moe", "qwen2_moe")
GGUF_ARCHS = ("qwen3moe", "qwen2moe")


def _hf_layers(config: dict) -> list[dict]:
    # As transformers builds the blocks: MoE unless in mlp_only_layers or off the sparse step.
    L, step = hf_int(config, "num_hidden_layers"), int(config.get("decoder_sparse_step") or 1)
    dense = set(config.get("mlp_only_layers") or ())
    return layer_kinds(L, [i for i in range(L) if i not in dense and (i + 1) % step == 0])


def spec_from_hf(config: dict) -> dict:
    layers = _hf_layers(config)
    qwen2 = config.get("model_type") == "qwen2_moe"
    Is = int(config.get("shared_expert_intermediate_size") or 0)
    moe = {
        # transformers 5 writes num_local_experts; older configs num_experts
        "num_experts": hf_int(config, "num_experts" if "num_experts" in config else "num_local_experts"), "top_k": hf_int(config, "num_experts_per_tok"),
        "norm_topk_prob": bool(config.get("norm_topk_prob", not qwen2)),
        "expert_intermediate_size": hf_int(config, "moe_intermediate_size"),
        "shared_expert_intermediate_size": Is, "shared_expert_gate": bool(Is) and qwen2,
    }
    if qwen2:
        return base.from_hf(config, "qwen3_moe", qkv_bias=bool(config.get("qkv_bias", True)), moe=moe, layers=layers)
    return base.from_hf(config, "qwen3_moe", qk_norm=True, qkv_bias=bool(config.get("attention_bias", False)), moe=moe,
                        layers=layers)


def spec_from_gguf(meta: dict, weights: dict, gguf_arch: str) -> dict:
    k = gguf_arch + "."
    # A block without a router is dense (the converter writes ffn_gate/up/down for mlp_only_layers).
    L = base.meta_int(meta, k + "block_count")
    moe_blocks = [i for i in range(L) if f"blk.{i}.ffn_gate_inp" in weights]
    first = f"blk.{moe_blocks[0] if moe_blocks else 0}."  # the shared expert's tensors, if any
    Is = base.meta_int(meta, k + "expert_shared_feed_forward_length", 0)
    if Is == 0 and first + "ffn_up_shexp" in weights:
        Is = int(weights[first + "ffn_up_shexp"][2][0])
    moe = {
        "num_experts": base.meta_int(meta, k + "expert_count"), "top_k": base.meta_int(meta, k + "expert_used_count"),
        "norm_topk_prob": bool(meta.get(k + "expert_weights_norm", gguf_arch == "qwen3moe")),
        "expert_intermediate_size": base.meta_int(meta, k + "expert_feed_forward_length"),
        "shared_expert_intermediate_size": Is, "shared_expert_gate": first + "ffn_gate_inp_shexp" in weights,
    }
    return base.from_gguf(meta, weights, gguf_arch, "qwen3_moe", "neox", moe=moe, layers=layer_kinds(L, moe_blocks),
                          qk_norm="blk.0.attn_q_norm" in weights, qkv_bias="blk.0.attn_q.bias" in weights)
