"""Pieces every architecture shares: rope tables, the canonical tensor table, HF name mapping."""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import numpy as np

ARCHS = ("llama", "qwen2", "qwen3", "qwen3_moe", "qwen35", "qwen35moe", "qwen3next")


def fail(msg: str) -> None:
    raise ValueError(f"[model] {msg}")


# What a config or GGUF header may claim: a lying count must not drive a huge loop or allocation.
# Real models have at most a few hundred layers and every size far below 2**31.
MAX_LAYERS = 4096
MAX_HEAD_DIM = 4096  # real heads are 64-512 wide; the rope table is sized by this
MAX_SIZE = 2**31 - 1
_LAYER_COUNT_KEYS = ("block_count", "num_hidden_layers")
_HEAD_DIM_KEYS = ("head_dim", "key_length", "value_length", "rope.dimension_count")


def bounded(key: str, v: int, fail=fail) -> int:
    """v, if under the limit for `key` (a layer count, a head width, else any size or count)."""
    limit = MAX_LAYERS if key.endswith(_LAYER_COUNT_KEYS) else MAX_HEAD_DIM if key.endswith(_HEAD_DIM_KEYS) \
        else MAX_SIZE
    if v > limit:
        fail(f"{key} = {v} is over the limit of {limit} (corrupt or hostile file?)")
    return v


def config_reader(where: str, fail=fail):
    """Decorates a function that reads a config or metadata dict: a field that is missing or of the
    wrong type deep inside (KeyError, TypeError, a division by a zero size...) becomes a ValueError
    naming `where`."""

    def wrap(fn):
        @functools.wraps(fn)
        def read(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError, OverflowError) as e:
                fail(f"{where}: a field is missing, zero or of the wrong type ({type(e).__name__}: {e})")
        return read

    return wrap


def positive_float(key: str, v: Any, *, allow_zero: bool = False) -> float:
    """v as a float, if it is a finite number > 0 (>= 0 with allow_zero)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
        fail(f"{key} must be a number, got {v!r}")
    f = float(v)
    if not math.isfinite(f) or f < 0 or (f == 0 and not allow_zero):
        fail(f"{key} must be a finite number {'>=' if allow_zero else '>'} 0, got {v!r}")
    return f


def rope_inv_freq(base: float, rot_dim: int, scaling: dict | None = None,
                  freq_factors: np.ndarray | None = None) -> np.ndarray:
    """float32[rot_dim//2] inverse frequencies with rope scaling folded in (float64 math, one rounding)."""
    if rot_dim <= 0 or rot_dim % 2 or rot_dim > MAX_HEAD_DIM:
        fail(f"rotary dimension must be a positive even number <= {MAX_HEAD_DIM}, got {rot_dim}")
    inv = 1.0 / (float(base) ** (np.arange(0, rot_dim, 2, dtype=np.float64) / rot_dim))
    kind = (scaling or {}).get("rope_type") or (scaling or {}).get("type") or "default"
    if kind == "default":
        pass
    elif kind == "linear":
        inv = inv / float(scaling["factor"])
    elif kind == "llama3":
        factor = float(scaling["factor"])
        low, high = float(scaling.get("low_freq_factor", 1.0)), float(scaling.get("high_freq_factor", 4.0))
        old_ctx = float(scaling["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old_ctx / low, inv / factor, inv)
        smooth = (old_ctx / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old_ctx / high) & (wavelen <= old_ctx / low)
        inv = np.where(medium, smoothed, scaled)
    else:
        fail(f"rope scaling type {kind!r} is not supported (supported: default, linear, llama3)")
    if freq_factors is not None:
        ff = np.asarray(freq_factors, dtype=np.float64).reshape(-1)
        if ff.shape[0] != rot_dim // 2:
            fail(f"rope_freqs has {ff.shape[0]} entries, expected {rot_dim // 2}")
        inv = inv / ff
    return inv.astype(np.float32)


def layer_kinds(num_layers: int, moe_layers: Any = ()) -> list[dict]:
    """The runtime's per-block layer kinds (docs/model_spec.md): attention, then a MoE FFN in the
    blocks of `moe_layers` and a dense FFN elsewhere."""
    moe = set(moe_layers)
    return [{"mixer": "attention", "ffn": "moe_ffn" if i in moe else "dense_ffn"} for i in range(num_layers)]


def base_spec(arch: str, **kw: Any) -> dict:
    spec = {
        "arch": arch, "rope_style": "neox", "qkv_bias": False, "qk_norm": False,
        "attn_output_gate": False, "moe": None, "tie_embeddings": False,
    }
    spec.update(kw)
    for key in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "rot_dim"):
        if not isinstance(spec.get(key), int) or spec[key] <= 0:
            fail(f"{arch}: {key} must be a positive integer, got {spec.get(key)!r}")
    if spec["num_heads"] % spec["num_kv_heads"]:
        fail(f"{arch}: num_heads {spec['num_heads']} is not a multiple of num_kv_heads {spec['num_kv_heads']}")
    if spec["rot_dim"] > spec["head_dim"]:
        fail(f"{arch}: rot_dim {spec['rot_dim']} > head_dim {spec['head_dim']}")
    if spec.get("layers") is None:  # every block alike
        L = spec["num_layers"]
        spec["layers"] = layer_kinds(L, range(L) if spec["moe"] else ())
    return spec


def expected_tensors(spec: dict) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """(required, optional) canonical tensor name -> logical shape for a spec."""
    V, H, L = spec["vocab_size"], spec["hidden_size"], spec["num_layers"]
    req = {"token_embd": (V, H), "output_norm": (H,)}
    opt: dict[str, tuple[int, ...]] = {}
    if not spec["tie_embeddings"]:
        req["output"] = (V, H)
    moe = spec["moe"]
    layers = spec.get("layers") or layer_kinds(L, range(L) if moe else ())
    for i, kinds in enumerate(layers):
        _block_tensors(req, opt, i, kinds, spec)
    for j, kinds in enumerate(spec.get("mtp_layers") or ()):
        p = f"blk.{L + j}."
        _block_tensors(req, opt, L + j, kinds, spec)
        req.update({p + "nextn.eh_proj": (H, 2 * H), p + "nextn.enorm": (H,), p + "nextn.hnorm": (H,),
                    p + "nextn.shared_head_norm": (H,)})
        opt.update({p + "nextn.embed_tokens": (V, H), p + "nextn.shared_head_head": (V, H)})
    return req, opt


def keep_mtp_blocks(weights: dict, num_layers: int) -> list[dict]:
    """Kinds of the multi-token-prediction blocks after the trunk (blk.{L + j} holding nextn.eh_proj, as
    llama.cpp's converter appends them): full attention, with a MoE FFN where the block has a router.
    Drops the tensors of any later block (one without eh_proj, which no drafter here runs), in place."""
    out: list[dict] = []
    while f"blk.{num_layers + len(out)}.nextn.eh_proj" in weights:
        b = num_layers + len(out)
        out.append({"mixer": "attention", "ffn": "moe_ffn" if f"blk.{b}.ffn_gate_inp" in weights else "dense_ffn"})
    end = num_layers + len(out)
    for name in list(weights):
        parts = name.split(".")
        if parts[0] == "blk" and parts[1].isdigit() and int(parts[1]) >= end:
            del weights[name]
    return out


def _block_tensors(req: dict, opt: dict, i: int, kinds: dict, spec: dict) -> None:
    """Block i's mixer and FFN tensors."""
    H, I, moe = spec["hidden_size"], spec["intermediate_size"], spec["moe"]
    p = f"blk.{i}."
    if kinds["mixer"] == "gdn":
        req.update(_gdn_tensors(p, H, spec.get("gdn")))
    elif kinds["mixer"] == "attention":
        _attention_tensors(req, p, spec)
    else:
        fail(f"layer {i}: unknown mixer kind {kinds['mixer']!r}")
    req[p + "ffn_norm"] = (H,)
    if kinds["ffn"] == "dense_ffn":
        req[p + "ffn_gate"] = (I, H)
        req[p + "ffn_up"] = (I, H)
        req[p + "ffn_down"] = (H, I)
    elif kinds["ffn"] == "moe_ffn" and moe is not None:
        E, Ie, Is = moe["num_experts"], moe["expert_intermediate_size"], moe["shared_expert_intermediate_size"]
        req[p + "ffn_gate_inp"] = (E, H)
        req[p + "ffn_gate_exps"] = (E, Ie, H)
        req[p + "ffn_up_exps"] = (E, Ie, H)
        req[p + "ffn_down_exps"] = (E, H, Ie)
        if Is:
            req[p + "ffn_gate_shexp"] = (Is, H)
            req[p + "ffn_up_shexp"] = (Is, H)
            req[p + "ffn_down_shexp"] = (H, Is)
            (req if moe["shared_expert_gate"] else opt)[p + "ffn_gate_inp_shexp"] = (1, H)
    else:
        fail(f"layer {i}: unknown FFN kind {kinds['ffn']!r}" + (" (the spec has no 'moe')" if moe is None else ""))


def _attention_tensors(req: dict, p: str, spec: dict) -> None:
    H, Hq, Hkv, D = spec["hidden_size"], spec["num_heads"], spec["num_kv_heads"], spec["head_dim"]
    req[p + "attn_norm"] = (H,)
    req[p + "attn_q"] = (Hq * D * (2 if spec["attn_output_gate"] else 1), H)
    req[p + "attn_k"] = (Hkv * D, H)
    req[p + "attn_v"] = (Hkv * D, H)
    req[p + "attn_output"] = (H, Hq * D)
    if spec["qkv_bias"]:
        req[p + "attn_q.bias"] = (req[p + "attn_q"][0],)
        req[p + "attn_k.bias"] = (Hkv * D,)
        req[p + "attn_v.bias"] = (Hkv * D,)
    if spec["qk_norm"]:
        req[p + "attn_q_norm"] = (D,)
        req[p + "attn_k_norm"] = (D,)


def _gdn_tensors(p: str, H: int, g: dict | None) -> dict[str, tuple[int, ...]]:
    """A Gated DeltaNet mixer's tensors (csrc/model/layers/gdn.h)."""
    if g is None:
        fail("a 'gdn' mixer needs the spec's 'gdn' sizes")
    Hv, Vw = g["num_v_heads"], g["num_v_heads"] * g["v_head_dim"]
    C = 2 * g["num_k_heads"] * g["k_head_dim"] + Vw
    return {p + "attn_norm": (H,), p + "attn_qkv": (C, H), p + "attn_gate": (Vw, H), p + "ssm_beta": (Hv, H),
            p + "ssm_alpha": (Hv, H), p + "ssm_conv1d": (C, g["conv_kernel"]), p + "ssm_dt.bias": (Hv,),
            p + "ssm_a": (Hv,), p + "ssm_norm": (g["v_head_dim"],), p + "ssm_out": (H, Vw)}


# HF parameter name (after the layer prefix) -> canonical suffix.
_HF_LAYER = {
    "input_layernorm.weight": "attn_norm",
    "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k", "self_attn.v_proj.weight": "attn_v",
    "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm", "self_attn.k_norm.weight": "attn_k_norm",
    "self_attn.o_proj.weight": "attn_output",
    "post_attention_layernorm.weight": "ffn_norm",
    "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down",
    "mlp.gate.weight": "ffn_gate_inp",
    "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp", "mlp.shared_expert.up_proj.weight": "ffn_up_shexp",
    "mlp.shared_expert.down_proj.weight": "ffn_down_shexp", "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp",
    # Gated DeltaNet (Qwen3.5); A_log and conv1d are converted by models/qwen35.adapt_hf_weights.
    "linear_attn.in_proj_qkv.weight": "attn_qkv", "linear_attn.in_proj_z.weight": "attn_gate",
    "linear_attn.in_proj_b.weight": "ssm_beta", "linear_attn.in_proj_a.weight": "ssm_alpha",
    "linear_attn.conv1d.weight": "ssm_conv1d", "linear_attn.dt_bias": "ssm_dt.bias", "linear_attn.A_log": "ssm_a",
    "linear_attn.norm.weight": "ssm_norm", "linear_attn.out_proj.weight": "ssm_out",
    # Qwen3-Next's fused projections, split by models/qwen35.split_fused_gdn.
    "linear_attn.in_proj_qkvz.weight": "attn_qkvz", "linear_attn.in_proj_ba.weight": "ssm_ba",
    # A multi-token-prediction block's input and output (hf_mtp_name; DeepSeek-V3 checkpoints' own names).
    "eh_proj.weight": "nextn.eh_proj", "enorm.weight": "nextn.enorm", "hnorm.weight": "nextn.hnorm",
    "shared_head.norm.weight": "nextn.shared_head_norm",
}
# Qwen3.5 / Qwen3-Next multi-token-prediction tensors outside mtp.layers.{j} -> their names in block num_layers.
_HF_MTP = {"mtp.fc.weight": "eh_proj.weight", "mtp.pre_fc_norm_embedding.weight": "enorm.weight",
           "mtp.pre_fc_norm_hidden.weight": "hnorm.weight", "mtp.norm.weight": "shared_head.norm.weight"}
_HF_MTP_LAYER_RE = re.compile(r"^mtp\.layers\.(\d+)\.(.+)$")
_HF_GLOBAL = {"model.embed_tokens.weight": "token_embd", "model.norm.weight": "output_norm", "lm_head.weight": "output"}
_LAYER_RE = re.compile(r"^model\.layers\.(\d+)\.(.+)$")
_EXPERT_RE = re.compile(r"^mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$")
_FUSED_EXPERT = {"mlp.experts.gate_up_proj": "gate_up", "mlp.experts.down_proj": "down"}


def hf_mtp_name(name: str, num_layers: int) -> str | None:
    """An HF multi-token-prediction tensor (mtp.*) renamed as llama.cpp's converter places it: MTP layer j
    becomes block num_layers + j, fc and the norms around it eh_proj, enorm, hnorm, shared_head.norm of
    block num_layers. None for a name outside that set."""
    if name in _HF_MTP:
        return f"model.layers.{num_layers}.{_HF_MTP[name]}"
    m = _HF_MTP_LAYER_RE.match(name)
    return f"model.layers.{num_layers + int(m.group(1))}.{m.group(2)}" if m else None


def hf_name(name: str) -> tuple[str, int | None, str | None] | None:
    """Map an HF tensor name to (canonical, expert index, expert part) or None if not a model weight.

    Per-expert tensors map to the stacked name with their expert index; fused expert stacks map
    to the stacked name with index None and part "gate_up" / "down".
    """
    if name in _HF_GLOBAL:
        return _HF_GLOBAL[name], None, None
    m = _LAYER_RE.match(name)
    if not m:
        return None
    prefix, rest = f"blk.{m.group(1)}.", m.group(2)
    if rest in _HF_LAYER:
        return prefix + _HF_LAYER[rest], None, None
    e = _EXPERT_RE.match(rest)
    if e:
        return prefix + f"ffn_{e.group(2)}_exps", int(e.group(1)), None
    if rest in _FUSED_EXPERT:
        return prefix + "ffn_" + _FUSED_EXPERT[rest] + "_exps", None, _FUSED_EXPERT[rest]
    return None


def hf_rope(config: dict) -> tuple[float, dict | None]:
    """(rope theta, scaling dict or None) from an HF config (transformers 4 and 5 spellings)."""
    params = config.get("rope_parameters") or {}
    scaling = config.get("rope_scaling") or (params if params.get("rope_type", "default") != "default" else None)
    theta = config.get("rope_theta", params.get("rope_theta", 10000.0))
    return positive_float("rope_theta", theta), scaling


def hf_int(config: dict, key: str, default: Any = None) -> int:
    v = config.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool):
        fail(f"config.json: {key} must be an integer, got {v!r}")
    return bounded(key, v)
