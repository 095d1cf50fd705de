"""Zero-copy reader for .safetensors files: parse the JSON header, memory-map the data.

(The `safetensors` package's numpy API copies every tensor; big models must stay mapped.)
Model folders and drafter checkpoints both read their files here.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from eyas.loaders.dtypes import BF16, F16, F32, GGML_QUANT_SIZES, GGMLType

# Header metadata keys under which a file lists the tensors stored as GGML blocks (U8 bytes), one key
# per block type ("eyas.q8_0", "eyas.q4_0", ...): a JSON object {name: logical [rows, cols]}. eyas packs its
# bundled drafters so (`eyas train-drafter pack`): the runtime reads the blocks as they are.
BLOCK_TYPES = ("Q8_0", "Q5_0", "Q4_1", "Q4_0")  # the types a drafter may be packed in


def block_key(type_name: str) -> str:
    return "eyas." + type_name.lower()


# safetensors dtype name -> numpy dtype of its elements (BF16 as its raw 16-bit pattern).
NUMPY = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64, "I32": np.int32,
         "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
_GGML = {"F32": F32, "F16": F16, "BF16": BF16, **{t: int(GGMLType[t]) for t in BLOCK_TYPES}}


class Tensor:
    """One stored tensor: raw bytes (uint8, zero-copy when aligned), dtype name ("F16", "I64", ...) and shape."""

    def __init__(self, raw: np.ndarray, dtype: str, shape: list[int], op: str = "safetensors"):
        self.raw, self.dtype, self.shape, self._op = raw, dtype, list(shape), op

    def numpy(self) -> np.ndarray:
        """A float32 / integer / bool numpy array (copies for F16 / BF16 / F64 / block types)."""
        if self.dtype in BLOCK_TYPES:
            from gguf import quants

            return quants.dequantize(self.raw.reshape(self.shape[0], -1), GGMLType[self.dtype]).reshape(self.shape)
        if self.dtype == "BF16":
            return (self.raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(self.shape)
        arr = self.raw.view(NUMPY[self.dtype]).reshape(self.shape)
        return arr.astype(np.float32) if self.dtype in ("F16", "F64") else arr

    def weight(self, name: str = "") -> tuple:
        """(array, GGML type id, shape) for the runtime: F32 as a float32 view, F16/BF16 as raw uint8 rows."""
        shape = list(self.shape)
        if self.dtype == "F32":
            return (self.raw.view(np.float32).reshape(shape), F32, shape)
        if self.dtype in ("F16", "BF16", *BLOCK_TYPES):
            return (self.raw.reshape(shape[0] if len(shape) > 1 else 1, -1), _GGML[self.dtype], shape)
        if self.dtype == "F64":
            return (self.numpy(), F32, shape)
        raise ValueError(f"[{self._op}] tensor {name!r} has dtype {self.dtype}; only float tensors are weights")


def read_tensors(path: str | Path, op: str = "safetensors") -> dict[str, Tensor]:
    """Every tensor of a .safetensors file; `op` prefixes the error messages."""
    path = Path(path)

    def fail(msg: str) -> None:
        raise ValueError(f"[{op}] {path.name}: {msg}")

    size = os.path.getsize(path)
    if size < 8:
        fail(f"file of {size} bytes is too short for a header (truncated?)")
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    n = int.from_bytes(bytes(mm[:8]), "little")
    if 8 + n > size:
        fail(f"header of {n} bytes runs past the end of the {size}-byte file (truncated?)")
    try:
        header = json.loads(bytes(mm[8 : 8 + n]))
    except (ValueError, RecursionError) as e:
        fail(f"header is not valid JSON ({type(e).__name__}: {e})")
    if not isinstance(header, dict):
        fail(f"header must be a JSON object, got {type(header).__name__}")
    base = 8 + n
    blocks = _block_shapes(header.get("__metadata__"), fail)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = _entry(name, info, fail)
        if name in blocks:  # GGML blocks stored as U8: checked against the logical shape, then typed so
            kind, rows, cols = blocks[name]
            per, nbytes = GGML_QUANT_SIZES[GGMLType[kind]]
            if dtype != "U8" or end - begin != rows * (cols // per) * nbytes or base + end > size:
                fail(f"tensor {name!r}: {dtype}{shape} is not {kind} data of [{rows}, {cols}]")
            out[name] = Tensor(mm[base + begin : base + end], kind, [rows, cols], op)
            continue
        if dtype not in NUMPY:
            fail(f"tensor {name!r} has unsupported dtype {dtype!r}")
        item = np.dtype(NUMPY[dtype]).itemsize
        if end - begin != math.prod(shape) * item:  # Python ints: a lying shape cannot overflow
            fail(f"tensor {name!r}: {end - begin} bytes do not match {dtype}{shape}")
        if base + end > size:
            fail(f"tensor {name!r} runs past the end of the file (truncated?)")
        raw = mm[base + begin : base + end]
        if (base + begin) % item:  # unaligned: copy so typed views are legal
            raw = np.frombuffer(raw.tobytes(), np.uint8)
        out[name] = Tensor(raw, dtype, shape, op)
    return out


def _block_shapes(metadata, fail) -> dict[str, tuple[str, int, int]]:
    """{name: (block type, rows, cols)} of the tensors the header's metadata lists under a block key."""
    out = {}
    if not isinstance(metadata, dict):
        return out
    for kind in BLOCK_TYPES:
        key = block_key(kind)
        if key not in metadata:
            continue
        per = GGML_QUANT_SIZES[GGMLType[kind]][0]
        try:
            listed = json.loads(metadata[key])
        except (TypeError, ValueError) as e:
            fail(f"metadata {key!r} is not a JSON object ({e})")
        ok = isinstance(listed, dict) and all(
            isinstance(v, list) and len(v) == 2 and all(_is_int(d) and d > 0 for d in v) and v[1] % per == 0
            for v in listed.values())
        if not ok:
            fail(f"metadata {key!r} must map names to [rows, cols] with cols a multiple of {per}")
        for name, (rows, cols) in listed.items():
            if name in out:
                fail(f"tensor {name!r} is listed under two block types ({out[name][0]} and {kind})")
            out[name] = (kind, rows, cols)
    return out


def write_blocks(src: str | Path, dst: str | Path, kind: str = "Q8_0") -> dict[str, str]:
    """Rewrite a safetensors file with every float matrix (2-D, columns a multiple of 32) as GGML blocks
    of `kind` (one of BLOCK_TYPES); matrices already stored in `kind` stay as they are, those in another
    block type are dequantized and quantized again (a second rounding); vectors, integer and bool tensors
    pass through. Returns {name: stored dtype}."""
    from gguf import quants
    from safetensors.numpy import save_file

    if kind not in BLOCK_TYPES:
        raise ValueError(f"[safetensors] block type must be one of {BLOCK_TYPES}, got {kind!r}")
    per = GGML_QUANT_SIZES[GGMLType[kind]][0]
    tensors, shapes, stored = {}, {}, {}
    for name, t in read_tensors(src).items():
        if t.dtype == kind:  # already packed so
            tensors[name], stored[name] = np.ascontiguousarray(t.weight()[0]), kind
            shapes.setdefault(kind, {})[name] = list(t.shape)
        elif t.dtype in ("F32", "F16", "BF16", "F64", *BLOCK_TYPES) and len(t.shape) == 2 and t.shape[1] % per == 0:
            tensors[name] = np.ascontiguousarray(quants.quantize(t.numpy().astype(np.float32), GGMLType[kind]))
            shapes.setdefault(kind, {})[name] = list(t.shape)
            stored[name] = kind
        elif t.dtype == "F16":  # kept in half precision (numpy() would widen it)
            tensors[name], stored[name] = np.ascontiguousarray(t.raw.view(np.float16).reshape(t.shape)), "F16"
        else:  # BF16 and F64 vectors become F32 (numpy() widens / narrows them), the rest stay as they are
            tensors[name] = np.ascontiguousarray(t.numpy())
            stored[name] = "F32" if t.dtype in ("BF16", "F64") else t.dtype
    metadata = {"format": "np", **{block_key(k): json.dumps(v) for k, v in shapes.items()}}
    save_file(tensors, str(dst), metadata=metadata)
    return stored


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry(name: str, info, fail) -> tuple:
    """(dtype, shape, (begin, end)) of one header entry, each checked for type and sign."""
    if not isinstance(info, dict):
        fail(f"tensor {name!r}: its header entry must be an object, got {type(info).__name__}")
    shape, offsets = info.get("shape", []), info.get("data_offsets")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        fail(f"tensor {name!r}: shape must be a list of non-negative integers, got {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]):
        fail(f"tensor {name!r}: data_offsets must be [begin, end] with 0 <= begin <= end, got {offsets!r}")
    return info.get("dtype"), shape, tuple(offsets)


def read_safetensors(path: str | Path) -> dict:
    """name -> (array, GGML type id, shape) of a model file's weights (see Tensor.weight)."""
    return {name: t.weight(name) for name, t in read_tensors(path).items()}
