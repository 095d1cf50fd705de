"""The weights table handed to the runtime, and its validation against a spec."""

from __future__ import annotations

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from eyas.models.common import expected_tensors

F32, F16, BF16 = 0, 1, 30
# GGML type ids the runtime's matmuls accept (DESIGN §5).
SUPPORTED = {0: "F32", 1: "F16", 30: "BF16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
             12: "Q4_K", 13: "Q5_K", 14: "Q6_K"}

Weight = tuple  # (array, dtype_id, shape)


def fail(msg: str) -> None:
    raise ValueError(f"[weights] {msg}")


def type_name(dtype_id: int) -> str:
    try:
        return GGMLQuantizationType(dtype_id).name
    except ValueError:
        return f"type {dtype_id}"


def nbytes_of(dtype_id: int, shape: tuple[int, ...], name: str) -> int:
    """Bytes a tensor of this GGML type and logical shape occupies."""
    block, size = GGML_QUANT_SIZES[GGMLQuantizationType(dtype_id)]
    if shape[-1] % block:
        fail(f"{name}: row length {shape[-1]} is not a multiple of the {type_name(dtype_id)} block size {block}")
    return int(np.prod(shape[:-1], dtype=np.int64)) * (shape[-1] // block) * size


def to_f32(array: np.ndarray, dtype_id: int, shape: tuple[int, ...]) -> np.ndarray:
    """Float32 copy of a small F16/BF16/F32 tensor (norm weights and biases must be F32)."""
    raw = np.ascontiguousarray(array)
    if dtype_id == F32:
        return raw.view(np.float32).reshape(shape)
    if dtype_id == F16:
        return raw.view(np.float16).astype(np.float32).reshape(shape)
    if dtype_id == BF16:
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    fail(f"vector of {type_name(dtype_id)} cannot be converted to F32")


def normalize_vectors(weights: dict) -> None:
    """Norm weights and biases become float32 arrays (dtype 0) in place."""
    for name, (arr, dt, shape) in list(weights.items()):
        if len(shape) == 1 and dt != F32 and dt in (F16, BF16):
            weights[name] = (to_f32(arr, dt, tuple(shape)), F32, list(shape))


def validate(spec: dict, weights: dict, source: str) -> None:
    """Every expected tensor present with the right shape, type and byte size; nothing unexpected."""
    required, optional = expected_tensors(spec)
    for name in required:
        if name not in weights:
            fail(f"{source}: tensor {name!r} is missing (needed by arch {spec['arch']})")
    for name, (arr, dt, shape) in weights.items():
        want = required.get(name, optional.get(name))
        if want is None:
            fail(f"{source}: unexpected tensor {name!r} (not used by arch {spec['arch']} with this config)")
        if tuple(shape) != tuple(want):
            fail(f"{source}: tensor {name!r} has shape {list(shape)}, expected {list(want)}")
        if dt not in SUPPORTED:
            fail(f"{source}: tensor {name!r} has unsupported type {type_name(dt)} "
                 f"(supported: {', '.join(sorted(SUPPORTED.values()))})")
        if len(shape) == 1 and dt != F32:
            fail(f"{source}: tensor {name!r} must be F32, got {type_name(dt)}")
        if not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous:
            fail(f"{source}: tensor {name!r} is not a contiguous array")
        if dt == F32 and arr.dtype != np.float32:
            fail(f"{source}: tensor {name!r}: F32 data must be a float32 array, got {arr.dtype}")
        if dt != F32 and arr.dtype != np.uint8:
            fail(f"{source}: tensor {name!r}: {type_name(dt)} data must be raw uint8 bytes, got {arr.dtype}")
        need = nbytes_of(dt, tuple(shape), name)
        if arr.nbytes != need:
            fail(f"{source}: tensor {name!r} holds {arr.nbytes} bytes, {type_name(dt)}{list(shape)} needs {need} "
                 "(truncated or corrupt file?)")
