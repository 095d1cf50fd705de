"""Hydra++ drafter checkpoints (eyas's own layout, written by `eyas train-drafter train --family hydra`)
-> what the C++ HydraDrafter takes. The math is in csrc/speculative/hydra_drafter.h and
eyas/train/hydra.py.

config.json: ``architectures: ["EyasHydraDrafter"]``, ``vocab_size``, ``draft_vocab_size``,
``hidden_size`` (the target's), the prefix block's ``intermediate_size``, ``num_attention_heads``,
``num_key_value_heads``, ``head_dim``, ``rms_norm_eps``, ``rope_style``, and ``hydra_num_heads`` /
``hydra_head_layers``. model.safetensors: ``blk.0.*`` (the prefix block under the target's GGUF
names), ``hydra.prefix_norm``, ``hydra.head.{i}.{in,res.l}``, ``hydra.norm``,
``hydra.lm_head``, ``d2t`` (int64 offsets), ``t2d``; the target's embedding and output norm are shared.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from eyas.drafters.checkpoint import fail, read_checkpoint
from eyas.drafters.eagle3 import WEIGHT_TYPES, convert_matrix, draft_to_target

ARCHITECTURE = "EyasHydraDrafter"
NORMS = ("blk.0.attn_norm", "blk.0.ffn_norm", "hydra.prefix_norm", "hydra.norm")


@dataclasses.dataclass
class HydraConfig:
    vocab_size: int
    draft_vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_eps: float
    rope_style: str
    num_draft_heads: int
    head_layers: int


def parse_config(cfg: dict) -> HydraConfig:
    """config.json -> HydraConfig; a ValueError names the first missing or bad field."""
    if ARCHITECTURE not in (cfg.get("architectures") or []):
        fail(f'config.json is not a Hydra drafter (architectures {cfg.get("architectures")!r}, '
             f'expected ["{ARCHITECTURE}"])')

    def whole(key, low=1):
        v = cfg.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            fail(f"config.json {key!r} must be an integer >= {low}, got {v!r}")
        return v

    style = cfg.get("rope_style")
    if style not in ("neox", "interleaved"):
        fail(f"config.json 'rope_style' must be 'neox' or 'interleaved', got {style!r}")
    eps = cfg.get("rms_norm_eps")
    if not isinstance(eps, (int, float)) or not 0 < eps < 1:
        fail(f"config.json 'rms_norm_eps' must be in (0, 1), got {eps!r}")
    return HydraConfig(vocab_size=whole("vocab_size"), draft_vocab_size=whole("draft_vocab_size"),
                       hidden_size=whole("hidden_size"), intermediate_size=whole("intermediate_size"),
                       num_heads=whole("num_attention_heads"), num_kv_heads=whole("num_key_value_heads"),
                       head_dim=whole("head_dim"), rms_eps=float(eps), rope_style=style,
                       num_draft_heads=whole("hydra_num_heads"), head_layers=whole("hydra_head_layers"))


def config_dict(c: HydraConfig, dtype: str, extra: dict | None = None) -> dict:
    """The config.json of a Hydra drafter (inverse of parse_config)."""
    out = {"architectures": [ARCHITECTURE], "model_type": "eyas_hydra", "vocab_size": c.vocab_size,
           "draft_vocab_size": c.draft_vocab_size, "hidden_size": c.hidden_size,
           "intermediate_size": c.intermediate_size, "num_attention_heads": c.num_heads,
           "num_key_value_heads": c.num_kv_heads, "head_dim": c.head_dim, "rms_norm_eps": c.rms_eps,
           "rope_style": c.rope_style, "hydra_num_heads": c.num_draft_heads, "hydra_head_layers": c.head_layers,
           "torch_dtype": dtype}
    if extra:
        out["eyas"] = extra
    return out


def tensor_shapes(c: HydraConfig) -> dict[str, list[int]]:
    """Every checkpoint tensor but d2t / t2d, with its shape."""
    H, I, nh, nkv, hd = c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, c.head_dim
    shapes = {"blk.0.attn_norm": [H], "blk.0.attn_q": [nh * hd, H], "blk.0.attn_k": [nkv * hd, H],
              "blk.0.attn_v": [nkv * hd, H], "blk.0.attn_output": [H, nh * hd], "blk.0.ffn_norm": [H],
              "blk.0.ffn_gate": [I, H], "blk.0.ffn_up": [I, H], "blk.0.ffn_down": [H, I], "hydra.prefix_norm": [H]}
    for i in range(c.num_draft_heads):
        shapes[f"hydra.head.{i}.in"] = [H, (i + 2) * H]
        for l in range(1, c.head_layers):
            shapes[f"hydra.head.{i}.res.{l}"] = [H, H]
    shapes["hydra.norm"] = [H]
    shapes["hydra.lm_head"] = [c.draft_vocab_size, H]
    return shapes


@dataclasses.dataclass
class HydraDrafter:
    """A Hydra drafter checked against its target: what the C++ HydraDrafter takes."""

    path: Path | None
    config: HydraConfig
    spec: dict  # the prefix block's model spec (the target's, one attention + dense FFN block)
    weights: dict  # name -> (array, dtype id, shape), the target's token_embd and output_norm included
    d2t: np.ndarray | None
    target_layers: int  # the target's num_layers: the drafter reads its final residual (aux id L)
    tree_policy: tuple | None = None
    _runtimes: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def feature_layers(self) -> list[int]:
        return [self.target_layers]

    def runtime(self, capacity: int):
        """The C++ drafter with a prefix KV cache of `capacity` committed positions (cached per capacity)."""
        if capacity not in self._runtimes:
            from eyas import _core

            c = self.config
            self._runtimes[capacity] = _core.speculative.HydraDrafter(
                self.spec, self.weights, self.d2t, num_heads=c.num_draft_heads, head_layers=c.head_layers,
                max_context=capacity)
        return self._runtimes[capacity]


def prefix_spec(target_spec: dict, c: HydraConfig) -> dict:
    """The model spec of the prefix block: the target's rope frequencies, the drafter's own shapes."""
    if target_spec.get("rot_dim", c.head_dim) > c.head_dim:
        fail(f"the target rotates {target_spec['rot_dim']} dims per head, more than the drafter's head_dim {c.head_dim}")
    return dict(target_spec, num_layers=1, layers=[{"mixer": "attention", "ffn": "dense_ffn"}], num_heads=c.num_heads,
                num_kv_heads=c.num_kv_heads, head_dim=c.head_dim, intermediate_size=c.intermediate_size,
                rope_style=c.rope_style, qkv_bias=False, qk_norm=False, attn_output_gate=False, moe=None, gdn=None,
                mtp_layers=[])


def build_hydra(config: dict, tensors: dict, target_spec: dict, target_weights: dict, path: Path | None = None,
                weight_type: str = "q8_0") -> HydraDrafter:
    """Validate a Hydra checkpoint against its target and assemble the runtime spec and weights."""
    if weight_type not in WEIGHT_TYPES:
        fail(f"weight_type must be one of {WEIGHT_TYPES}, got {weight_type!r}")
    c = parse_config(config)
    V, H = target_spec["vocab_size"], target_spec["hidden_size"]
    if c.vocab_size != V:
        fail(f"Hydra drafter was trained for a vocabulary of {c.vocab_size} tokens, the target has {V}")
    if c.hidden_size != H:
        fail(f"Hydra drafter reads target states of size {c.hidden_size}, the target's are {H}")
    weights = {}
    for name, shape in tensor_shapes(c).items():
        if name not in tensors:
            fail(f"tensor {name!r} is missing from the Hydra checkpoint")
        t = tensors[name]
        if list(t.shape) != shape:
            fail(f"tensor {name!r} has shape {list(t.shape)}, expected {shape}")
        weights[name] = (t.numpy(), 0, shape) if name in NORMS else convert_matrix(t, weight_type)
    for shared in ("token_embd", "output_norm"):
        if shared not in target_weights:
            fail(f"the target has no {shared} to share with the Hydra drafter")
        weights[shared] = target_weights[shared]
    d2t = draft_to_target(tensors["d2t"].numpy() if "d2t" in tensors else None, c.draft_vocab_size, V)
    tree = (config.get("eyas") or {}).get("tree_policy") if isinstance(config.get("eyas"), dict) else None
    if tree is not None and not (isinstance(tree, list) and len(tree) == 3):
        fail(f'config.json "eyas.tree_policy" must be [top_k, depth, total_tokens], got {tree!r}')
    return HydraDrafter(path, c, prefix_spec(target_spec, c), weights, d2t, target_spec["num_layers"],
                        tuple(tree) if tree else None)


def is_hydra(folder: Path) -> bool:
    import json

    try:
        cfg = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return ARCHITECTURE in (cfg.get("architectures") or [])


def load_hydra(folder, target_spec: dict, target_weights: dict, weight_type: str = "q8_0") -> HydraDrafter:
    folder = Path(folder)
    if not folder.is_dir():
        fail(f"{folder}: no such drafter folder")
    config, tensors = read_checkpoint(folder)
    return build_hydra(config, tensors, target_spec, target_weights, folder, weight_type)
