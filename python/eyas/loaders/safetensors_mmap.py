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

from eyas.loaders.dtypes import BF16, F16, F32, GGMLType

# Header metadata key under which a file lists the tensors stored as GGML Q8_0 blocks (U8 bytes):
# a JSON object {name: logical [rows, cols]}. eyas writes its bundled drafters so (halving their bytes);
# the CPU runs drafters as Q8_0 anyway, so nothing is lost that loading would not lose.
Q8_0_KEY = "eyas.q8_0"
Q8_0, Q8_0_BLOCK, Q8_0_BYTES = int(GGMLType.Q8_0), 32, 34  # elements / bytes per block

# safetensors dtype name -> numpy dtype of its elements (BF16 as its raw 16-bit pattern).
NUMPY = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64, "I32": np.int32,
         "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
_GGML = {"F32": F32, "F16": F16, "BF16": BF16, "Q8_0": Q8_0}


class Tensor:
    """One stored tensor: raw bytes (uint8, zero-copy when aligned), dtype name ("F16", "I64", ...) and shape."""

    def __init__(self, raw: np.ndarray, dtype: str, shape: list[int], op: str = "safetensors"):
        self.raw, self.dtype, self.shape, self._op = raw, dtype, list(shape), op

    def numpy(self) -> np.ndarray:
        """A float32 / integer / bool numpy array (copies for F16 / BF16 / F64 / Q8_0)."""
        if self.dtype == "Q8_0":
            from gguf import quants

            return quants.dequantize(self.raw.reshape(self.shape[0], -1), GGMLType.Q8_0).reshape(self.shape)
        if self.dtype == "BF16":
            return (self.raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(self.shape)
        arr = self.raw.view(NUMPY[self.dtype]).reshape(self.shape)
        return arr.astype(np.float32) if self.dtype in ("F16", "F64") else arr

    def weight(self, name: str = "") -> tuple:
        """(array, GGML type id, shape) for the runtime: F32 as a float32 view, F16/BF16 as raw uint8 rows."""
        shape = list(self.shape)
        if self.dtype == "F32":
            return (self.raw.view(np.float32).reshape(shape), F32, shape)
        if self.dtype in ("F16", "BF16", "Q8_0"):
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
    q8 = _q8_0_shapes(header.get("__metadata__"), fail)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = _entry(name, info, fail)
        if name in q8:  # Q8_0 blocks stored as U8: checked against the logical shape, then typed so
            rows, cols = q8[name]
            if dtype != "U8" or end - begin != rows * (cols // Q8_0_BLOCK) * Q8_0_BYTES or base + end > size:
                fail(f"tensor {name!r}: {dtype}{shape} is not Q8_0 data of [{rows}, {cols}]")
            out[name] = Tensor(mm[base + begin : base + end], "Q8_0", [rows, cols], op)
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


def _q8_0_shapes(metadata, fail) -> dict[str, tuple[int, int]]:
    """{name: (rows, cols)} of the tensors the header's metadata lists under Q8_0_KEY."""
    if not isinstance(metadata, dict) or Q8_0_KEY not in metadata:
        return {}
    try:
        listed = json.loads(metadata[Q8_0_KEY])
    except (TypeError, ValueError) as e:
        fail(f"metadata {Q8_0_KEY!r} is not a JSON object ({e})")
    ok = isinstance(listed, dict) and all(
        isinstance(v, list) and len(v) == 2 and all(_is_int(d) and d > 0 for d in v) and v[1] % Q8_0_BLOCK == 0
        for v in listed.values())
    if not ok:
        fail(f"metadata {Q8_0_KEY!r} must map names to [rows, cols] with cols a multiple of {Q8_0_BLOCK}")
    return {k: tuple(v) for k, v in listed.items()}


def write_q8_0(src: str | Path, dst: str | Path) -> dict[str, str]:
    """Rewrite a safetensors file with every float matrix (2-D, columns a multiple of 32) as Q8_0
    blocks; vectors, integer and bool tensors stay as they are. Returns {name: stored dtype}."""
    from gguf import quants
    from safetensors.numpy import save_file

    tensors, shapes, stored = {}, {}, {}
    for name, t in read_tensors(src).items():
        if t.dtype == "Q8_0":  # already packed
            tensors[name], shapes[name], stored[name] = np.ascontiguousarray(t.weight()[0]), list(t.shape), "Q8_0"
        elif t.dtype in ("F32", "F16", "BF16", "F64") and len(t.shape) == 2 and t.shape[1] % Q8_0_BLOCK == 0:
            tensors[name] = np.ascontiguousarray(quants.quantize(t.numpy().astype(np.float32), GGMLType.Q8_0))
            shapes[name] = list(t.shape)
            stored[name] = "Q8_0"
        elif t.dtype == "F16":  # kept in half precision (numpy() would widen it)
            tensors[name], stored[name] = np.ascontiguousarray(t.raw.view(np.float16).reshape(t.shape)), "F16"
        else:  # BF16 and F64 vectors become F32 (numpy() widens / narrows them), the rest stay as they are
            tensors[name] = np.ascontiguousarray(t.numpy())
            stored[name] = "F32" if t.dtype in ("BF16", "F64") else t.dtype
    save_file(tensors, str(dst), metadata={"format": "np", Q8_0_KEY: json.dumps(shapes)})
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
