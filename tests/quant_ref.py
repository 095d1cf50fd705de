"""numpy reference for the quantized matmul and embedding kernels.

Weights are raw GGUF bytes (uint8 [N, row_bytes]); gguf.quants dequantizes them (the oracle).
Activations are quantized per block exactly as the kernels define it (amax / 127 in float32,
round half to even), so the reference differs from the kernel only by float summation order.
"""

from __future__ import annotations

import numpy as np
from gguf import GGML_QUANT_SIZES
from gguf import GGMLQuantizationType as QT

from eyas.loaders.dtypes import SUPPORTED
from eyas.loaders.dtypes import dequantize as dequantize_entry

# The runtime's weight types (eyas.loaders.dtypes.SUPPORTED), grouped by block kind.
FLOAT_TYPES = ("F32", "F16", "BF16")
LEGACY_TYPES = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")
K_TYPES = ("Q4_K", "Q5_K", "Q6_K")
ALL_TYPES = FLOAT_TYPES + LEGACY_TYPES + K_TYPES
assert sorted(ALL_TYPES) == sorted(SUPPORTED.values())

# (elements, bytes) per block (gguf's table), and byte offsets of the f16 scale fields inside one block.
BLOCK = {t: GGML_QUANT_SIZES[QT[t]] for t in ALL_TYPES}
_SCALES = {"Q8_0": (0,), "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q4_K": (0, 2),
           "Q5_K": (0, 2), "Q6_K": (208,)}


def edge_k(wtype: str) -> int:
    """A reduction length that reaches every code path's tail for `wtype` (odd for F32, 3 blocks for BF16)."""
    return {"F32": 577, "F16": 576, "BF16": 48}.get(wtype, 512 if wtype in K_TYPES else 576)


def row_bytes(wtype: str, k: int) -> int:
    elems, nbytes = BLOCK[wtype]
    assert k % elems == 0
    return k // elems * nbytes


def random_weights(rng: np.random.Generator, wtype: str, n: int, k: int) -> np.ndarray:
    """Random valid [n, k] weights of `wtype` as raw bytes uint8[n, row_bytes]."""
    if wtype == "F32":
        return rng.standard_normal((n, k), dtype=np.float32).view(np.uint8).reshape(n, -1)
    if wtype == "F16":
        return rng.standard_normal((n, k)).astype(np.float16).view(np.uint8).reshape(n, -1)
    if wtype == "BF16":
        bits = rng.standard_normal((n, k), dtype=np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).view(np.uint8).reshape(n, -1)
    elems, nbytes = BLOCK[wtype]
    blocks = rng.integers(0, 256, size=(n * (k // elems), nbytes), dtype=np.uint8)  # every byte pattern is valid
    for off in _SCALES[wtype]:  # finite f16 scales of either sign
        blocks[:, off:off + 2] = (rng.standard_normal((blocks.shape[0], 1)) * 0.02).astype(np.float16).view(np.uint8)
    return blocks.reshape(n, -1)


def max_weights(wtype: str, n: int, k: int) -> np.ndarray:
    """[n, k] weights of `wtype` with every quant byte at 0xFF (the largest quants) and every f16
    scale field 0.01, as raw bytes uint8[n, row_bytes]: the integer sums of the SIMD dots at their largest."""
    elems, nbytes = BLOCK[wtype]
    blocks = np.full((n * (k // elems), nbytes), 0xFF, np.uint8)
    for off in _SCALES[wtype]:
        blocks[:, off:off + 2] = np.array([0.01], np.float16).view(np.uint8)
    return blocks.reshape(n, -1)


def k_extreme_weights(wtype: str, n: int, k: int) -> np.ndarray:
    """max_weights for a K-quant, and Q6_K's int8 scales at -128 in every other block: the signed
    scale at its most negative as well. uint8[n, row_bytes]."""
    w = max_weights(wtype, n, k).reshape(-1, BLOCK[wtype][1])
    if wtype == "Q6_K":
        w[::2, 192:208] = 0x80
    return w.reshape(n, -1)


def extreme_activations(rows: int, k: int, mixed_from: int) -> np.ndarray:
    """float32[rows, k] activations that quantize to +-127: all +3, row 1 all -3, row 2 alternating, and
    from row `mixed_from` on every third element -3 (the int16 pair sums of SIMD dots at their bound)."""
    x = np.full((rows, k), 3.0, np.float32)
    x[1] = -3.0
    x[2, ::2] = -3.0
    x[mixed_from:] = np.where(np.arange(k) % 3 == 0, -3.0, 3.0)
    return x


def dequantize(raw: np.ndarray, wtype: str, k: int) -> np.ndarray:
    """uint8[n, row_bytes] -> float32[n, k] (eyas.loaders.dtypes.dequantize: gguf's numpy dequantizers)."""
    raw = np.ascontiguousarray(raw).reshape(-1, row_bytes(wtype, k))
    return dequantize_entry(raw, int(QT[wtype]), (raw.shape[0], k))


def quantize_activations(x: np.ndarray, block: int) -> np.ndarray:
    """The kernels' activation quantization, dequantized: float64[T, K] = q * d per block."""
    t, k = x.shape
    xb = x.astype(np.float32).reshape(t, k // block, block)
    d = (np.abs(xb).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint(xb * inv), -127, 127)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(t, k)


def matmul_ref(x: np.ndarray, raw: np.ndarray, wtype: str, n: int, k: int) -> np.ndarray:
    """y = x @ w.T in float64 from the dequantized weights and the kernels' activation rounding."""
    w = dequantize(raw, wtype, k).astype(np.float64)
    elems = BLOCK[wtype][0]
    xa = x.astype(np.float64) if elems == 1 else quantize_activations(x, elems)
    return (xa @ w.T).astype(np.float32)


def q4_pack(raw: np.ndarray, wtype: str, n: int, k: int) -> np.ndarray:
    """The repack of Q4_0/Q4_1/Q5_0/Q5_1 weights (cpu/quant/q4pack.h): per 16 rows and 32-block,
    [4][16][4] nibble bytes (dword r of each row's qs); Q5: a [16][4] plane of fifth bits (byte
    (c, e): bit r of element 4r + e, bit 4 + r of element 16 + 4r + e); 16 f16 d; 16 f16 m
    (Q4_1 and Q5_1 only)."""
    elems, nbytes = BLOCK[wtype]
    qs_off = nbytes - 16
    blocks = np.ascontiguousarray(raw).reshape(n, k // elems, nbytes)[: n // 16 * 16]
    g = blocks.reshape(n // 16, 16, k // elems, nbytes).transpose(0, 2, 1, 3)  # [group, block, row, bytes]
    lead = g.shape[:2]
    qs = g[..., qs_off:].reshape(*g.shape[:3], 4, 4).transpose(0, 1, 3, 2, 4)  # [group, block, r, row, 4]
    parts = [qs.reshape(*lead, 256)]
    has_min = wtype in ("Q4_1", "Q5_1")
    if wtype in ("Q5_0", "Q5_1"):
        qh_off = 4 if has_min else 2
        qh = g[..., qh_off : qh_off + 4].copy().view("<u4")[..., 0].astype(np.uint32)  # [group, block, row]
        e, r = np.arange(4)[:, None], np.arange(4)[None, :]  # [e, r]
        low = (qh[..., None, None] >> (4 * r + e)) & 1
        high = (qh[..., None, None] >> (16 + 4 * r + e)) & 1
        plane = ((low << r) | (high << (4 + r))).sum(-1).astype(np.uint8)  # [group, block, row, e]
        parts.append(plane.reshape(*lead, 64))
    parts.append(g[..., 0:2].reshape(*lead, 32))
    if has_min:
        parts.append(g[..., 2:4].reshape(*lead, 32))
    return np.concatenate(parts, -1).reshape(-1)


def q8_pack(raw: np.ndarray, n: int, k: int) -> np.ndarray:
    """The VNNI repack of Q8_0 weights (cpu/quant/q4pack.h): per 16 rows and 32-block, [8][16][4]
    bytes (dword r of each row's quants, each + 128 as uint8), then 16 f16 d."""
    blocks = np.ascontiguousarray(raw).reshape(n, k // 32, 34)[: n // 16 * 16]
    g = blocks.reshape(n // 16, 16, k // 32, 34).transpose(0, 2, 1, 3)  # [group, block, row, bytes]
    qs = (g[..., 2:] ^ 0x80).reshape(*g.shape[:3], 8, 4).transpose(0, 1, 3, 2, 4)  # [group, block, r, row, 4]
    d = g[..., 0:2]
    return np.concatenate([qs.reshape(*g.shape[:2], 512), d.reshape(*g.shape[:2], 32)], -1).reshape(-1)
