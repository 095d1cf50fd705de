"""Writes .safetensors bytes from any header (even one that is not a valid safetensors header)."""

from __future__ import annotations

import json
import struct

import numpy as np


def header_of(tensors: dict[str, np.ndarray]) -> tuple[dict, bytes]:
    """The honest header and data of float32 tensors, in order."""
    header, data, at = {}, b"", 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [at, at + len(raw)]}
        data, at = data + raw, at + len(raw)
    return header, data


def to_bytes(header, data: bytes = b"", *, header_len: int | None = None) -> bytes:
    """8-byte little-endian header length, the header (JSON of a Python value, or raw bytes), the data."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if header_len is None else header_len) + raw + data
