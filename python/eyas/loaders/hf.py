"""Hugging Face model folders: config.json + *.safetensors (+ tokenizer.json, tokenizer_config.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eyas import models
from eyas.loaders.dtypes import F32, to_f32
from eyas.loaders.safetensors_mmap import read_safetensors
from eyas.loaders.weights import normalize_vectors, validate
from eyas.models.common import config_reader, hf_mtp_name, hf_name, keep_mtp_blocks


def fail(msg: str) -> None:
    raise ValueError(f"[hf] {msg}")


def read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        fail(f"{path.name} is not valid JSON ({e})")
    if not isinstance(value, dict):
        fail(f"{path.name} must be a JSON object, got {type(value).__name__}")
    return value


def _stack(name: str, parts: list) -> tuple:
    """Stack per-expert 2-D weights into one [E, rows, cols] tensor (a copy: experts are separate on disk)."""
    dts = {p[1] for p in parts}
    shapes = {tuple(p[2]) for p in parts}
    if len(dts) != 1 or len(shapes) != 1:
        fail(f"experts of {name!r} differ in dtype or shape")
    arr = np.stack([np.ascontiguousarray(p[0]) for p in parts])
    shape = [len(parts), *parts[0][2]]
    return (arr if dts == {F32} else arr.reshape(len(parts), -1), dts.pop(), shape)


def _split_rows(w: tuple, lo: int, hi: int) -> tuple:
    """Rows [lo, hi) of every expert of a fused [E, R, C] stack (copied; the slice is strided)."""
    arr, dt, (E, R, C) = w
    shaped = arr.reshape(E, R, -1)
    part = np.ascontiguousarray(shaped[:, lo:hi])
    return (part if dt == F32 else part.reshape(E, -1), dt, [E, hi - lo, C])


# Composite (vision-language) checkpoints: the text model's tensors under model.language_model.*, plus a
# vision tower that a causal LM does not use. Multi-token-prediction heads (mtp.*) follow the trunk's blocks.
_TEXT_PREFIX = "model.language_model."
_UNUSED_PREFIXES = ("model.visual.",)


def map_weights(raw: dict, num_experts: int, num_layers: int) -> dict:
    weights: dict = {}
    experts: dict[str, dict[int, tuple]] = {}
    for name, w in raw.items():
        if name.startswith(_UNUSED_PREFIXES):
            continue
        if name.startswith(_TEXT_PREFIX):
            name = "model." + name[len(_TEXT_PREFIX):]
        elif name.startswith("mtp."):
            name = hf_mtp_name(name, num_layers) or name
        mapped = hf_name(name)
        if mapped is None:
            if name.endswith("rotary_emb.inv_freq"):
                continue  # a cache some old checkpoints saved; recomputed from the config
            fail(f"unexpected tensor {name!r} (no mapping for this architecture)")
        canon, expert, part = mapped
        if expert is not None:
            experts.setdefault(canon, {})[expert] = w
        elif part == "gate_up":  # fused [E, 2*Ie, H]: gate rows first, then up
            half = w[2][1] // 2
            weights[canon.replace("gate_up", "gate")] = _split_rows(w, 0, half)
            weights[canon.replace("gate_up", "up")] = _split_rows(w, half, 2 * half)
        else:
            weights[canon] = w
    for canon, by_index in experts.items():
        if sorted(by_index) != list(range(num_experts)):
            missing = sorted(set(range(num_experts)) - set(by_index))
            fail(f"{canon!r}: experts {missing[:8]} missing (config has {num_experts})")
        weights[canon] = _stack(canon, [by_index[e] for e in range(num_experts)])
    return weights


def _as_f32(w: tuple, shape, fn=None) -> tuple:
    """A float weight as a float32 copy in `shape`, optionally mapped by fn (float32 in, float32 out)."""
    arr = to_f32(w[0], w[1], tuple(w[2])).reshape(shape).astype(np.float32)
    if fn is not None:
        arr = np.asarray(fn(arr), dtype=np.float32)
    return (np.ascontiguousarray(arr), F32, list(shape))


@config_reader("config.json")
def spec_from_config(config: dict):
    """(architecture module, spec) of an HF config.json."""
    module = models.for_hf(config.get("model_type"))
    return module, module.spec_from_hf(config)


def load_hf(folder: str | Path):
    """Read an HF folder into (spec, weights, config, keepalive)."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        fail(f"{folder}: no config.json (expected a Hugging Face model folder or a .gguf file)")
    config = read_json(cfg_path)
    module, spec = spec_from_config(config)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        fail(f"{folder}: no *.safetensors files")
    raw: dict = {}
    for f in files:
        for name, w in read_safetensors(f).items():
            if name in raw:
                fail(f"tensor {name!r} appears in more than one file")
            raw[name] = w
    weights = map_weights(raw, (spec["moe"] or {}).get("num_experts", 0), spec["num_layers"])
    spec["mtp_layers"] = keep_mtp_blocks(weights, spec["num_layers"])
    if "tie_word_embeddings" not in config:
        spec["tie_embeddings"] = "output" not in weights
    if spec["tie_embeddings"]:
        weights.pop("output", None)  # some checkpoints save the tied copy too
    normalize_vectors(weights)
    adapt = getattr(module, "adapt_hf_weights", None)  # an architecture's own conventions (e.g. 1 + w norms)
    if adapt is not None:
        adapt(weights, spec, _as_f32)
    validate(spec, weights, folder.name)
    return spec, weights, config
