"""EAGLE-3 drafter checkpoints (SpecForge, EAGLE and vLLM speculators layouts) -> drafter spec.

Reference: eagle3.md §1 (config keys, tensor names, d2t) and §2.2 (aux layer id conventions).
A drafter is checked against its target here, so a mismatch is a ValueError at load time.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from eyas.drafters.checkpoint import Tensor, fail, read_checkpoint
from eyas.loaders.dtypes import GGMLType
from eyas.loaders.safetensors_mmap import BLOCK_TYPES
from eyas.models.common import bounded, config_reader, rope_inv_freq

# Checkpoint name (after the layer prefix) -> canonical drafter tensor name.
_LAYER = {
    "hidden_norm.weight": "hidden_norm",
    "input_layernorm.weight": "input_norm",
    "self_attn.q_proj.weight": "attn_q",
    "self_attn.k_proj.weight": "attn_k",
    "self_attn.v_proj.weight": "attn_v",
    "self_attn.o_proj.weight": "attn_output",
    "post_attention_layernorm.weight": "post_norm",
    "mlp.gate_proj.weight": "ffn_gate",
    "mlp.up_proj.weight": "ffn_up",
    "mlp.down_proj.weight": "ffn_down",
}
_GLOBAL = {
    "fc.weight": "fc", "fc.bias": "fc.bias", "norm.weight": "output_norm", "model.norm.weight": "output_norm",
    "lm_head.weight": "output", "embed_tokens.weight": "token_embd", "model.embed_tokens.weight": "token_embd",
    "d2t": "d2t", "t2d": "t2d", "draft_id_to_target_id": "d2t",
}
_LAYER_PREFIX = re.compile(r"^(?:model\.)?(?:midlayer|layers\.0)\.(.+)$")
_IGNORED = re.compile(r"rotary_emb\.inv_freq$")
NORMS = ("hidden_norm", "input_norm", "post_norm", "output_norm", "fc.bias")


@dataclasses.dataclass
class DrafterConfig:
    layout: str  # "specforge" | "eagle" | "speculators"
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_eps: float
    rope_theta: float
    rope_scaling: dict | None
    vocab_size: int | None  # the target vocabulary the drafter was trained for
    draft_vocab_size: int | None
    target_hidden_size: int | None
    aux_layers: list[int] | None  # input-of-layer ids (HF hidden_states index); None = target default
    norm_before_residual: bool
    norm_output: bool


def _int(cfg: dict, key: str, default=None, where="config.json") -> int:
    v = cfg.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        fail(f"{where}: {key} must be a positive integer, got {v!r}")
    return bounded(key, v, fail)


@config_reader("drafter config.json", fail)
def parse_config(config: dict) -> DrafterConfig:
    archs = config.get("architectures") or []
    speculators = config.get("speculators_model_type") == "eagle3" or "Eagle3Speculator" in archs
    if speculators:
        layout = "speculators"
        layer = config.get("transformer_layer_config")
        if not isinstance(layer, dict):
            fail("speculators config: transformer_layer_config is missing")
        nbr_default = True  # vLLM's default for this format
    else:
        layout = "eagle" if archs == ["LlamaForCausalLM"] else "specforge"
        layer = config
        nbr_default = False
    if layer.get("model_type", "llama") != "llama":
        fail(f"drafter model_type {layer.get('model_type')!r} is not supported (EAGLE-3 drafters are llama blocks)")
    if layer.get("num_hidden_layers", 1) != 1:
        fail(f"num_hidden_layers = {layer.get('num_hidden_layers')}: only 1-layer EAGLE-3 drafters are supported")
    if layer.get("hidden_act", "silu") != "silu":
        fail(f"hidden_act {layer.get('hidden_act')!r} is not supported (silu only)")
    eagle = config.get("eagle_config") or {}
    if eagle.get("use_aux_hidden_state", True) is False:
        fail("eagle_config.use_aux_hidden_state = false (single hidden state drafters) is not supported")
    for flag in ("fc_norm", "norm_before_fc"):
        if config.get(flag) or layer.get(flag):
            fail(f"variant flag {flag} is not supported by this eyas version")
    H = _int(layer, "hidden_size")
    nh = _int(layer, "num_attention_heads")
    nkv = _int(layer, "num_key_value_heads", nh)
    if nh % nkv:
        fail(f"num_attention_heads {nh} is not a multiple of num_key_value_heads {nkv}")
    hd = _int(layer, "head_dim") if layer.get("head_dim") is not None else H // nh
    ids = config.get("eagle_aux_hidden_state_layer_ids", eagle.get("eagle_aux_hidden_state_layer_ids"))
    if ids is not None:
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and i >= 0 for i in ids):
            fail(f"eagle_aux_hidden_state_layer_ids must be a list of non-negative ints, got {ids!r}")
        if ids[0] == 1:  # SGLang / SpecForge output-of-layer ids: convert to input-of-layer (§2.2)
            ids = [i + 1 for i in ids]
    scaling = layer.get("rope_scaling") or config.get("rope_scaling")
    theta = layer.get("rope_theta", (layer.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    nbr = config.get("norm_before_residual", layer.get("norm_before_residual", nbr_default))
    return DrafterConfig(
        layout=layout, hidden_size=H, intermediate_size=_int(layer, "intermediate_size"), num_heads=nh,
        num_kv_heads=nkv, head_dim=int(hd), rms_eps=float(layer.get("rms_norm_eps", 1e-6)),
        rope_theta=float(theta), rope_scaling=scaling,
        vocab_size=layer.get("vocab_size", config.get("vocab_size")),
        draft_vocab_size=config.get("draft_vocab_size", layer.get("draft_vocab_size")),
        target_hidden_size=config.get("target_hidden_size", layer.get("target_hidden_size")),
        aux_layers=list(ids) if ids is not None else None, norm_before_residual=bool(nbr),
        norm_output=bool(config.get("norm_output", True)),
    )


def canonical_tensors(tensors: dict[str, Tensor]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for name, t in tensors.items():
        if _IGNORED.search(name):
            continue
        m = _LAYER_PREFIX.match(name)
        canon = _LAYER.get(m.group(1)) if m else _GLOBAL.get(name)
        if canon is None:
            fail(f"unexpected tensor {name!r} in the drafter checkpoint")
        if canon in out:
            fail(f"tensor {canon!r} appears twice (as {name!r})")
        out[canon] = t
    return out


def draft_to_target(d2t: np.ndarray | None, draft_vocab: int, vocab: int) -> np.ndarray | None:
    """Absolute target id per draft index (int32[Vd]), or None for the identity.

    Checkpoints store offsets (id = i + d2t[i]); llama.cpp-style files store absolute ids. Offsets are
    assumed unless they would leave the vocabulary while the values read as valid absolute ids.
    """
    if d2t is None:
        if draft_vocab != vocab:
            fail(f"draft vocabulary ({draft_vocab}) differs from the target's ({vocab}) but there is no d2t")
        return None
    d2t = np.asarray(d2t).astype(np.int64).reshape(-1)
    if d2t.shape[0] != draft_vocab:
        fail(f"d2t has {d2t.shape[0]} entries, lm_head has {draft_vocab} rows")
    ids = d2t + np.arange(draft_vocab)
    if ids.min(initial=0) < 0 or ids.max(initial=0) >= vocab:
        ids = d2t  # absolute-id variant
    if ids.min(initial=0) < 0 or ids.max(initial=0) >= vocab:
        fail(f"d2t maps draft tokens outside the target vocabulary [0, {vocab})")
    if len(np.unique(ids)) != len(ids):
        fail("d2t maps two draft tokens to the same target token")
    if np.array_equal(ids, np.arange(draft_vocab)) and draft_vocab == vocab:
        return None
    return ids.astype(np.int32)


def default_aux_layers(num_layers: int) -> list[int]:
    """Residual stream entering layers [2, L//2, L-3] (reference §2.1)."""
    return [2, num_layers // 2, num_layers - 3]


@dataclasses.dataclass
class Drafter:
    """A drafter checked against its target: the spec and weights the C++ Eagle3Drafter takes."""

    path: Path | None
    config: DrafterConfig
    spec: dict
    weights: dict  # canonical name -> (array, dtype id, shape)
    d2t: np.ndarray | None  # int32[Vd] absolute target ids, None = identity
    feature_layers: list[int]  # target layers whose input the drafter reads (input-of-layer ids)
    shares_embedding: bool
    # (output_norm F32[H], output weight (array, dtype, [V, H]), rms_eps) of the target: lets the
    # speculative loop compute target logits only for the tree nodes the accept walk visits.
    target_head: tuple | None = None
    target_layers: int = 0  # the target's num_layers
    # Recommended tree shape (top_k, depth, total_tokens) from config.json "eyas": {"tree_policy": [k, d, t]};
    # eyas.speculative turns it into a TreePolicy (and checks its ranges).
    tree_policy: tuple | None = None
    # Lazy target logits (needs target_head): pays off only when a batched lm_head is expensive;
    # with the CPU's batched matmul paths computing every node's logits in verify is as fast.
    lazy_logits: bool = False
    _runtimes: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def aux_layers(self) -> list[int]:
        """Layers the target must capture: the drafter's features, then (with lazy_logits) the
        final pre-norm state (id = num_layers)."""
        lazy = self.lazy_logits and self.target_head is not None
        return self.feature_layers + ([self.target_layers] if lazy else [])

    def runtime(self, capacity: int):
        """The C++ drafter with a KV cache of `capacity` committed positions (cached per capacity)."""
        if capacity not in self._runtimes:
            from eyas import _core

            self._runtimes[capacity] = _core.speculative.Eagle3Drafter(self.spec, self.weights, self.d2t,
                                                                max_context=capacity)
        return self._runtimes[capacity]


WEIGHT_TYPES = ("q8_0", "f32", "keep")
# The draft head scores its vocabulary with a Q4_0 copy and recomputes this many best logits per row
# from the stored head (DrafterSpec::rescore_rows): the stored head's choices at about Q4_0's cost.
HEAD_RESCORE_ROWS = 32


def convert_matrix(t: Tensor, weight_type: str) -> tuple:
    """Runtime weight of a checkpoint matrix. The CPU matmul has fast paths for Q8_0 and F32 but
    not for F16, so half-precision drafters are converted at load (only acceptance can change); a matrix
    packed in blocks (`eyas train-drafter pack --type`) runs as stored under "q8_0", the default."""
    if weight_type == "keep" or (weight_type == "f32" and t.dtype == "F32") or (weight_type == "q8_0" and t.dtype in BLOCK_TYPES):
        return t.weight()
    w = t.numpy().astype(np.float32, copy=False)
    if weight_type == "q8_0" and w.shape[-1] % 32 == 0:
        from gguf import GGMLQuantizationType, quants

        raw = np.ascontiguousarray(quants.quantize(w, GGMLQuantizationType.Q8_0)).reshape(-1).view(np.uint8)
        return (raw, int(GGMLQuantizationType.Q8_0), list(t.shape))
    return (np.ascontiguousarray(w), 0, list(t.shape))


def head_rescore_rows(head: tuple, hidden: int, draft_vocab: int, weight_type: str) -> int:
    """HEAD_RESCORE_ROWS under the default weight_type "q8_0" (the fastest), unless a Q4_0 copy would not be
    cheaper (the head is Q4_0 already) or cannot be made (rows not in 32-element blocks); "f32" and "keep"
    keep every logit from the head as loaded."""
    if weight_type != "q8_0" or head[1] == int(GGMLType.Q4_0) or hidden % 32:
        return 0
    return min(HEAD_RESCORE_ROWS, draft_vocab)


def coarse_head(head: tuple) -> tuple:
    """The Q4_0 scoring copy of the head (array, dtype id, shape), made once per loaded drafter so that
    every runtime and fork shares it (~24 ms and 4.5 MiB for a 16,384-row head)."""
    from eyas import _core

    raw, dtype, shape = head
    return (_core.ops.requantize_q4_0(raw, dtype, shape), int(GGMLType.Q4_0), list(shape))


# Matrices the drafter runs as one matmul each (q|k|v, gate|up). Stored back to back in one array, every
# runtime's model::concat_rows joins them as a view instead of copying them (~3 MiB for the bundled drafter).
FUSED = (("attn_q", "attn_k", "attn_v"), ("ffn_gate", "ffn_up"))


def stack_fused_parts(weights: dict) -> None:
    """Moves each FUSED group of `weights` (array, dtype id, shape) whose parts share a type into one array,
    each part a view of its rows; done once per loaded drafter, so every runtime and fork reads the same bytes."""
    for parts in FUSED:
        ws = [weights[p] for p in parts]
        arrays = [np.ascontiguousarray(w[0]) for w in ws]
        if len({w[1] for w in ws}) != 1 or len({a.dtype for a in arrays}) != 1:
            continue
        stacked = np.concatenate([a.reshape(-1) for a in arrays])
        at = 0
        for p, w, a in zip(parts, ws, arrays):
            weights[p] = (stacked[at : at + a.size].reshape(a.shape), w[1], w[2])
            at += a.size


def build_drafter(config: dict, tensors: dict[str, Tensor], target_spec: dict, target_weights: dict,
                  path: Path | None = None, weight_type: str = "q8_0") -> Drafter:
    """Validate a parsed checkpoint against the target and assemble the runtime spec and weights.

    weight_type: "q8_0" (default, fastest on the CPU), "f32" (exact) or "keep" (as stored)."""
    if weight_type not in WEIGHT_TYPES:
        fail(f"weight_type must be one of {WEIGHT_TYPES}, got {weight_type!r}")
    cfg = parse_config(config)
    t = canonical_tensors(tensors)
    V, Ht, L = target_spec["vocab_size"], target_spec["hidden_size"], target_spec["num_layers"]
    H, nh, nkv, hd, I = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.intermediate_size
    if cfg.vocab_size is not None and cfg.vocab_size != V:
        fail(f"drafter was trained for a vocabulary of {cfg.vocab_size} tokens, the target has {V}")
    if cfg.target_hidden_size is not None and cfg.target_hidden_size != Ht:
        fail(f"drafter expects target hidden size {cfg.target_hidden_size}, the target has {Ht}")
    aux = cfg.aux_layers if cfg.aux_layers is not None else default_aux_layers(L)
    bad = [i for i in aux if not 0 <= i < L]
    if bad:
        fail(f"aux layer ids {bad} are out of range for a target with {L} layers (input-of-layer ids 0..{L - 1})")
    if "output" not in t:
        fail("lm_head.weight is missing")
    Vd = t["output"].shape[0]
    if cfg.draft_vocab_size is not None and cfg.draft_vocab_size != Vd:
        fail(f"draft_vocab_size {cfg.draft_vocab_size} != lm_head rows {Vd}")
    n_aux = len(aux)
    shapes = {
        "fc": [H, n_aux * Ht], "hidden_norm": [H], "input_norm": [H], "attn_q": [nh * hd, 2 * H],
        "attn_k": [nkv * hd, 2 * H], "attn_v": [nkv * hd, 2 * H], "attn_output": [H, nh * hd], "post_norm": [H],
        "ffn_gate": [I, H], "ffn_up": [I, H], "ffn_down": [H, I], "output_norm": [H], "output": [Vd, H],
    }
    optional = {"fc.bias": [H], "token_embd": [V, H]}
    for name, shape in shapes.items():
        if name not in t:
            fail(f"tensor {name!r} is missing from the checkpoint")
    for name, shape in {**shapes, **optional}.items():
        if name in t and t[name].shape != shape:
            if name == "fc" and t[name].shape[0] == H and t[name].shape[1] % Ht == 0:
                fail(f"fc.weight takes {t[name].shape[1]} inputs = {t[name].shape[1] // Ht} x target hidden size "
                     f"{Ht}, but {n_aux} aux layers are configured")
            if name == "fc" and t[name].shape[0] == H:
                fail(f"fc.weight {t[name].shape} does not fit the target hidden size {Ht} x {n_aux} aux layers")
            fail(f"tensor {name!r} has shape {t[name].shape}, expected {shape}")
    d2t = draft_to_target(t["d2t"].numpy() if "d2t" in t else None, Vd, V)
    weights = {}
    for name in list(shapes) + [n for n in optional if n in t]:
        weights[name] = (t[name].numpy(), 0, t[name].shape) if name in NORMS else convert_matrix(t[name], weight_type)
    shares = "token_embd" not in t
    if shares:
        if H != Ht:
            fail(f"drafter hidden size {H} differs from the target's {Ht} and it has no embed_tokens of its own")
        emb = target_weights.get("token_embd")
        if emb is None:
            fail("the target has no token_embd to share with the drafter")
        weights["token_embd"] = emb
    spec = {
        "hidden_size": H, "target_hidden_size": Ht, "num_aux": n_aux, "num_heads": nh, "num_kv_heads": nkv,
        "head_dim": hd, "intermediate_size": I, "vocab_size": V, "draft_vocab_size": Vd, "rms_eps": cfg.rms_eps,
        "rot_dim": hd, "rope_inv_freq": rope_inv_freq(cfg.rope_theta, hd, cfg.rope_scaling),
        "norm_before_residual": cfg.norm_before_residual, "norm_output": cfg.norm_output,
        "rescore_rows": head_rescore_rows(weights["output"], H, Vd, weight_type),
    }
    if spec["rescore_rows"]:
        weights["output_coarse"] = coarse_head(weights["output"])
    stack_fused_parts(weights)
    head = None
    out_w = target_weights.get("token_embd" if target_spec.get("tie_embeddings") else "output")
    if "output_norm" in target_weights and out_w is not None and target_weights["output_norm"][1] == 0:
        head = (np.ascontiguousarray(target_weights["output_norm"][0], dtype=np.float32), out_w,
                float(target_spec["rms_eps"]))
    tree = (config.get("eyas") or {}).get("tree_policy") if isinstance(config.get("eyas"), dict) else None
    if tree is not None and not (isinstance(tree, list) and len(tree) == 3):
        fail(f'config.json "eyas.tree_policy" must be [top_k, depth, total_tokens], got {tree!r}')
    return Drafter(path, cfg, spec, weights, d2t, list(aux), shares, head, L, tuple(tree) if tree else None)


def load_eagle3(folder: str | Path, target_spec: dict, target_weights: dict, weight_type: str = "q8_0") -> Drafter:
    folder = Path(folder)
    if not folder.is_dir():
        fail(f"{folder}: no such drafter folder")
    config, tensors = read_checkpoint(folder)
    return build_drafter(config, tensors, target_spec, target_weights, folder, weight_type)
