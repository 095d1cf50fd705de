"""Zero-copy reader for .safetensors files: parse the JSON header, memory-map the data.

(The `safetensors` package's numpy API copies every tensor; big models must stay mapped.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from eyas.loaders.weights import BF16, F16, F32

_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def fail(path: Path, msg: str) -> None:
    raise ValueError(f"[safetensors] {path.name}: {msg}")


def read_safetensors(path: str | Path) -> dict:
    """name -> (array, GGML type id, shape). F32 as float32 views, F16/BF16 as raw uint8 views."""
    path = Path(path)
    size = os.path.getsize(path)
    if size < 8:
        fail(path, f"file of {size} bytes is too short for a header (truncated?)")
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    n = int.from_bytes(bytes(mm[:8]), "little")
    if 8 + n > size:
        fail(path, f"header of {n} bytes runs past the end of the {size}-byte file (truncated?)")
    try:
        header = json.loads(bytes(mm[8 : 8 + n]))
    except ValueError as e:
        fail(path, f"header is not valid JSON ({e})")
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = info.get("dtype"), [int(d) for d in info.get("shape", [])], info["data_offsets"]
        if dtype not in _ITEMSIZE:
            fail(path, f"tensor {name!r} has unsupported dtype {dtype!r}")
        if end - begin != int(np.prod(shape, dtype=np.int64)) * _ITEMSIZE[dtype]:
            fail(path, f"tensor {name!r}: {end - begin} bytes do not match {dtype}{shape}")
        if base + end > size:
            fail(path, f"tensor {name!r} runs past the end of the file (truncated?)")
        raw = mm[base + begin : base + end]
        if dtype == "F32":
            arr = raw.view(np.float32) if (base + begin) % 4 == 0 else np.frombuffer(raw.tobytes(), np.float32)
            out[name] = (arr.reshape(shape), F32, shape)
        elif dtype in ("F16", "BF16"):
            out[name] = (raw.reshape(shape[0] if len(shape) > 1 else 1, -1), F16 if dtype == "F16" else BF16, shape)
        elif dtype == "F64":
            out[name] = (raw.view(np.float64).astype(np.float32).reshape(shape), F32, shape)
        else:
            fail(path, f"tensor {name!r} has dtype {dtype}; only float tensors are model weights")
    return out
