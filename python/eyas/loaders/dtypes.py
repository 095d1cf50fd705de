"""GGML type ids of weights-table entries.

Ids, names and block sizes are the `gguf` package's (GGMLQuantizationType, GGML_QUANT_SIZES);
eyas adds only which of them the runtime accepts and the float views of one entry.
"""

from __future__ import annotations

import numpy as np
from gguf.constants import GGML_QUANT_SIZES
from gguf.constants import GGMLQuantizationType as GGMLType

F32, F16, BF16 = int(GGMLType.F32), int(GGMLType.F16), int(GGMLType.BF16)
FLOAT_TYPES = (F32, F16, BF16)
# GGML type ids the runtime's matmuls accept (DESIGN §5); csrc/core/dtype.h lists the same.
SUPPORTED = {int(t): t.name for t in (GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q4_0, GGMLType.Q4_1,
                                      GGMLType.Q5_0, GGMLType.Q5_1, GGMLType.Q8_0, GGMLType.Q4_K, GGMLType.Q5_K,
                                      GGMLType.Q6_K)}


def fail(msg: str) -> None:
    raise ValueError(f"[weights] {msg}")


def type_name(dtype_id: int) -> str:
    try:
        return GGMLType(dtype_id).name
    except ValueError:
        return f"type {dtype_id}"


def block_size(dtype_id: int) -> tuple[int, int]:
    """(elements, bytes) of one block of a GGML type (1 element for the float types)."""
    try:
        return GGML_QUANT_SIZES[GGMLType(dtype_id)]
    except ValueError:
        fail(f"unknown GGML type id {dtype_id}")


def nbytes_of(dtype_id: int, shape: tuple[int, ...], name: str) -> int:
    """Bytes a tensor of this GGML type and logical shape occupies."""
    block, size = block_size(dtype_id)
    if shape[-1] % block:
        fail(f"{name}: row length {shape[-1]} is not a multiple of the {type_name(dtype_id)} block size {block}")
    return int(np.prod(shape[:-1], dtype=np.int64)) * (shape[-1] // block) * size


def to_f32(array: np.ndarray, dtype_id: int, shape: tuple[int, ...]) -> np.ndarray:
    """Float32 view (F32) or copy (F16/BF16) of a float entry in its logical shape."""
    raw = np.ascontiguousarray(array)
    if dtype_id == F32:
        return raw.view(np.float32).reshape(shape)
    if dtype_id == F16:
        return raw.view(np.float16).astype(np.float32).reshape(shape)
    if dtype_id == BF16:
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    fail(f"a {type_name(dtype_id)} tensor is not a float tensor")


def dequantize(array: np.ndarray, dtype_id: int, shape) -> np.ndarray:
    """float32 tensor of logical `shape` from any weights-table entry (quantized ones through gguf.quants)."""
    from gguf.quants import dequantize as gguf_dequantize

    shape = tuple(shape)
    if dtype_id in FLOAT_TYPES:
        return to_f32(array, dtype_id, shape)
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return gguf_dequantize(raw.reshape(rows, -1), GGMLType(dtype_id)).astype(np.float32).reshape(shape)
