"""Reading drafter checkpoint files: safetensors (float, int and bool tensors) and, when torch is
installed, PyTorch `.bin` pickles (EAGLE's own releases). Float tensors stay memory-mapped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

F32, F16, BF16 = 0, 1, 30
_FLOAT_IDS = {"F32": F32, "F16": F16, "BF16": BF16}
_NUMPY = {"F64": np.float64, "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
          "BOOL": np.bool_, "F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def fail(msg: str) -> None:
    raise ValueError(f"[drafter] {msg}")


class Tensor:
    """One checkpoint tensor: raw bytes plus dtype name ("F16", "I64", ...) and shape."""

    def __init__(self, raw: np.ndarray, dtype: str, shape: list[int]):
        self.raw, self.dtype, self.shape = raw, dtype, list(shape)

    def numpy(self) -> np.ndarray:
        """A float32 / integer / bool numpy array (copies for F16 / BF16)."""
        if self.dtype == "BF16":
            return (self.raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(self.shape)
        arr = self.raw.view(_NUMPY[self.dtype]).reshape(self.shape)
        return arr.astype(np.float32) if self.dtype in ("F16", "F64") else arr

    def weight(self) -> tuple:
        """(array, GGML dtype id, shape) for the runtime: F32 as float32, F16/BF16 as raw uint8 bytes."""
        if self.dtype == "F32":
            return (self.raw.view(np.float32).reshape(self.shape), F32, list(self.shape))
        if self.dtype in ("F16", "BF16"):
            return (self.raw, _FLOAT_IDS[self.dtype], list(self.shape))
        if self.dtype == "F64":
            return (self.numpy(), F32, list(self.shape))
        fail(f"a {self.dtype} tensor cannot be a weight matrix")


def read_safetensors(path: Path) -> dict[str, Tensor]:
    size = os.path.getsize(path)
    if size < 8:
        fail(f"{path.name}: {size} bytes is too short for a safetensors file (truncated?)")
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    n = int.from_bytes(bytes(mm[:8]), "little")
    if 8 + n > size:
        fail(f"{path.name}: header runs past the end of the file (truncated?)")
    try:
        header = json.loads(bytes(mm[8 : 8 + n]))
    except ValueError as e:
        fail(f"{path.name}: header is not valid JSON ({e})")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info.get("dtype"), [int(d) for d in info.get("shape", [])]
        begin, end = info["data_offsets"]
        if dtype not in _NUMPY:
            fail(f"{path.name}: tensor {name!r} has unsupported dtype {dtype!r}")
        item = np.dtype(_NUMPY[dtype]).itemsize
        if end - begin != int(np.prod(shape, dtype=np.int64)) * item or 8 + n + end > size:
            fail(f"{path.name}: tensor {name!r} bytes do not match {dtype}{shape} (truncated?)")
        raw = mm[8 + n + begin : 8 + n + end]
        if (8 + n + begin) % item:  # unaligned: copy so typed views are legal
            raw = np.frombuffer(raw.tobytes(), np.uint8)
        out[name] = Tensor(raw, dtype, shape)
    return out


def read_torch_bin(path: Path) -> dict[str, Tensor]:
    try:
        import torch
    except ImportError:
        fail(f"{path.name} is a PyTorch pickle; install torch to read it, or convert it to safetensors")
    sd = torch.load(path, map_location="cpu", weights_only=True)
    out = {}
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
             torch.int32: "I32", torch.bool: "BOOL", torch.float64: "F64"}
    for name, t in sd.items():
        if t.dtype not in names:
            fail(f"{path.name}: tensor {name!r} has unsupported dtype {t.dtype}")
        t = t.contiguous()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().view(np.uint8).reshape(-1)
        out[name] = Tensor(raw.copy(), names[t.dtype], list(t.shape))
    return out


def read_checkpoint(folder: Path) -> tuple[dict, dict[str, Tensor]]:
    """(config.json as a dict, every tensor of the folder's weight files by name)."""
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        fail(f"{folder}: no config.json (expected an EAGLE-3 drafter folder)")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except ValueError as e:
        fail(f"{cfg_path}: not valid JSON ({e})")
    files = sorted(folder.glob("*.safetensors"))
    reader = read_safetensors
    if not files:
        files, reader = sorted(folder.glob("*.bin")), read_torch_bin
    if not files:
        fail(f"{folder}: no *.safetensors or *.bin weight files")
    tensors: dict[str, Tensor] = {}
    for f in files:
        for name, t in reader(f).items():
            if name in tensors:
                fail(f"{folder}: tensor {name!r} appears in more than one file")
            tensors[name] = t
    return config, tensors
