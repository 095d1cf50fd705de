"""GGUF files (llama.cpp's format): metadata, tokenizer fields and zero-copy tensor views."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eyas import models
from eyas.models.common import config_reader
from eyas.loaders.gguf_file import GGUFError, GGUFFile
from eyas.loaders.dtypes import F32, SUPPORTED, nbytes_of, type_name
from eyas.loaders.weights import normalize_vectors, validate


def fail(path: Path, msg: str) -> None:
    raise ValueError(f"[gguf] {path.name}: {msg}")


def open_file(path: str | Path) -> GGUFFile:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"[gguf] no such file: {path}")
    try:
        return GGUFFile(path)
    except GGUFError as e:
        fail(path, f"not a valid GGUF file: {e}")
    except (ValueError, OSError, UnicodeDecodeError) as e:  # empty file, unreadable file
        fail(path, f"not a valid GGUF file, or truncated ({type(e).__name__}: {e})")


def tensors(f: GGUFFile) -> dict:
    """name -> (zero-copy array, GGML type id, logical shape [rows, cols] / [E, rows, cols])."""
    out = {}
    for t in f.tensors:
        name = t.name[: -len(".weight")] if t.name.endswith(".weight") else t.name
        shape = [int(d) for d in reversed(t.dims)]  # GGML lists dims fastest-first
        if t.type not in SUPPORTED:
            fail(f.path, f"tensor {name!r} has unsupported type {type_name(t.type)} "
                         f"(supported: {', '.join(sorted(SUPPORTED.values()))})")
        try:
            raw = f.tensor_bytes(t, nbytes_of(t.type, tuple(shape), name))
        except GGUFError as e:
            fail(f.path, str(e))
        arr = raw.view(np.float32).reshape(shape) if t.type == F32 else raw.reshape(shape[0] if len(shape) > 1 else 1, -1)
        out[name] = (arr, t.type, shape)
    return out


@config_reader("GGUF metadata")
def spec_from_metadata(meta: dict, weights: dict, arch):
    """The architecture's spec; a missing or mistyped metadata field is a ValueError."""
    return models.for_gguf(arch).spec_from_gguf(meta, weights, arch)


def load_gguf(path: str | Path):
    """Read a GGUF file into (spec, weights, metadata, memory map). The map is what keeps the weights'
    views valid; the parsed header (a 248K-token vocabulary is ~35 MB of Python strings) is not kept
    with it, so it is freed once the caller has built the tokenizer."""
    path = Path(path)
    f = open_file(path)
    weights = tensors(f)
    meta = f.fields
    arch = meta.get("general.architecture")
    spec = spec_from_metadata(meta, weights, arch)
    normalize_vectors(weights)
    validate(spec, weights, path.name)
    return spec, weights, meta, f.data
