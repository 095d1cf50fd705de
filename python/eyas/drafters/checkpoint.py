"""Reading drafter checkpoint files: safetensors (float, int and bool tensors) and, when torch is
installed, PyTorch `.bin` pickles (EAGLE's own releases). Float tensors stay memory-mapped
(eyas.loaders.safetensors_mmap, the one safetensors reader)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eyas.loaders.safetensors_mmap import Tensor, read_tensors


def fail(msg: str) -> None:
    raise ValueError(f"[drafter] {msg}")


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
        out[name] = Tensor(raw.copy(), names[t.dtype], list(t.shape), "drafter")
    return out


def read_safetensors(path: Path) -> dict[str, Tensor]:
    return read_tensors(path, "drafter")


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
