"""GGUF files (llama.cpp's format) via the `gguf` package, memory-mapped and zero-copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFReader

from eyas import models
from eyas.loaders.weights import F32, nbytes_of, normalize_vectors, type_name, validate, SUPPORTED

# Large tokenizer arrays are read separately by the tokenizer, not decoded into the metadata dict.
_SKIP_META = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.scores"}


def fail(path: Path, msg: str) -> None:
    raise ValueError(f"[gguf] {path.name}: {msg}")


def open_reader(path: str | Path) -> GGUFReader:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"[gguf] no such file: {path}")
    try:
        return GGUFReader(path, "r")
    except Exception as e:  # the reader raises assorted errors on malformed headers
        fail(path, f"not a valid GGUF file, or truncated ({type(e).__name__}: {e})")


def metadata(reader: GGUFReader) -> dict:
    meta = {}
    for key, field in reader.fields.items():
        if key in _SKIP_META:
            continue
        try:
            meta[key] = field.contents()
        except Exception:  # unreadable optional metadata must not block loading
            continue
    return meta


def string_array(reader: GGUFReader, key: str) -> list[str] | None:
    f = reader.fields.get(key)
    if f is None:
        return None
    return [bytes(f.parts[i]).decode("utf-8", errors="replace") for i in f.data]


def int_array(reader: GGUFReader, key: str) -> np.ndarray | None:
    f = reader.fields.get(key)
    if f is None:
        return None
    return np.array([int(f.parts[i][0]) for i in f.data], dtype=np.int64)


def tensors(reader: GGUFReader, path: Path) -> dict:
    """name -> (zero-copy array, GGML type id, logical shape [rows, cols] / [E, rows, cols])."""
    out = {}
    for t in reader.tensors:
        name = t.name[: -len(".weight")] if t.name.endswith(".weight") else t.name
        dt = int(t.tensor_type)
        shape = [int(d) for d in reversed(list(t.shape))]  # GGML lists dims fastest-first
        if dt not in SUPPORTED:
            fail(path, f"tensor {name!r} has unsupported type {type_name(dt)} "
                       f"(supported: {', '.join(sorted(SUPPORTED.values()))})")
        data = np.asarray(t.data)
        if data.nbytes != nbytes_of(dt, tuple(shape), name):
            fail(path, f"tensor {name!r}: file holds {data.nbytes} bytes, needs {nbytes_of(dt, tuple(shape), name)} "
                       "(truncated file?)")
        arr = data.reshape(shape) if dt == F32 else data.view(np.uint8).reshape(shape[0] if len(shape) > 1 else 1, -1)
        out[name] = (arr, dt, shape)
    return out


def load_gguf(path: str | Path):
    """Read a GGUF file into (spec, weights, metadata, reader); the reader owns the memory map."""
    path = Path(path)
    reader = open_reader(path)
    try:
        weights = tensors(reader, path)
    except ValueError:
        raise
    except Exception as e:  # numpy raises on views past the end of a truncated map
        fail(path, f"cannot read tensor data ({type(e).__name__}: {e}); truncated file?")
    meta = metadata(reader)
    arch = meta.get("general.architecture")
    module = models.for_gguf(arch)
    spec = module.spec_from_gguf(meta, weights, arch)
    normalize_vectors(weights)
    validate(spec, weights, path.name)
    return spec, weights, meta, reader
