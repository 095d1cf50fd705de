"""The weights table handed to the runtime, and its validation against a spec."""

from __future__ import annotations

import numpy as np

from eyas.loaders.dtypes import F32, FLOAT_TYPES, SUPPORTED, fail, nbytes_of, to_f32, type_name
from eyas.models.common import expected_tensors

Weight = tuple  # (array, dtype_id, shape)


def normalize_vectors(weights: dict) -> None:
    """Norm weights and biases become float32 arrays (dtype 0) in place."""
    for name, (arr, dt, shape) in list(weights.items()):
        if len(shape) == 1 and dt != F32 and dt in FLOAT_TYPES:
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
