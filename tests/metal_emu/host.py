"""The Metal host's dispatch logic in Python, run against the emulator: kernel names, argument
structs, buffer order, grid and threadgroup sizes as csrc/metal/ uses them (constants parsed
from csrc/metal/kernel_names.h). Each `run_<op>` takes a parity case's input dict
(tests/parity/cases_*.py) and returns what the CPU op returns.
"""

from __future__ import annotations

import re

import numpy as np

from gguf import GGMLQuantizationType

from tests import quant_ref as qr
from tests.metal_emu import build
from tests.metal_emu.runner import pack_args

_HEADER = build.ROOT / "csrc" / "metal" / "kernel_names.h"
GGML_TYPE = {t: int(GGMLQuantizationType[t]) for t in qr.ALL_TYPES}
BLOCK = {t: qr.BLOCK[t][0] for t in qr.LEGACY_TYPES + qr.K_TYPES}  # elements per block


def host_kernel_names() -> list[str]:
    """The kernel names the host can request (kKernelNames in csrc/metal/kernel_names.h)."""
    src = _HEADER.read_text()
    body = re.search(r"kKernelNames\[\]\s*=\s*\{(.*?)\};", src, re.S).group(1)
    return re.findall(r'"(\w+)"', body)


def _constants() -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"constexpr int (\w+) = (\d+);", _HEADER.read_text())}


C = _constants()
for _m in re.finditer(r"constexpr int (\w+) = (\d+), (\w+) = (\d+);", _HEADER.read_text()):
    C[_m.group(1)], C[_m.group(3)] = int(_m.group(2)), int(_m.group(4))


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class Host:
    """Dispatches through one emulator with one schedule; `rows_tg` overrides row-kernel threads."""

    def __init__(self, emu, schedule: str = "forward", seed: int = 0, rows_tg: int | None = None):
        self.emu, self.schedule, self.seed = emu, schedule, seed
        self.rows_tg = rows_tg or C["kRowThreads"]
        self.names = set(host_kernel_names())

    def dispatch(self, name, args, buffers, grid, tg, tg_mem=()):
        assert name in self.names, f"{name} is not in kKernelNames"
        self.emu.dispatch(name, args, buffers, grid, tg, tg_mem, schedule=self.schedule, seed=self.seed)

    # x: [rows, dim]; w: [dim]
    def rms_norm(self, x, w, eps):
        x = np.ascontiguousarray(x, np.float32)
        rows, dim = int(np.prod(x.shape[:-1])), x.shape[-1]
        y = np.empty_like(x)
        self.dispatch("rms_norm_f32", pack_args("RmsNormArgs", rows=rows, dim=dim, eps=eps), [x, w, y], rows,
                      self.rows_tg)
        return y

    # x: [T, H, D]; pos: [T]; inv_freq: [rot/2]
    def rope(self, x, pos, inv_freq, style):
        t, h, d = x.shape
        y = np.empty_like(x)
        args = pack_args("RopeArgs", tokens=t, heads=h, head_dim=d, rot_dim=2 * len(inv_freq),
                         style={"neox": 0, "interleaved": 1}[style])
        self.dispatch("rope_f32", args, [x, pos, inv_freq, y], (h, t), 32)
        return y

    def elementwise(self, op, a, b=None, s=0.0):
        cols = a.shape[-1]
        rows = a.size // max(cols, 1)
        bcast = int(b is not None and b.shape != a.shape)
        y = np.empty_like(a)
        args = pack_args("ElementwiseArgs", rows=rows, cols=cols, broadcast=bcast, s=s)
        bufs = [a, y] if op == "scale" else [a, b, y]
        self.dispatch(f"{op}_f32", args, bufs, _ceil(a.size, C["kFlatThreads"]), C["kFlatThreads"])
        return y

    def softmax(self, x, temperature, log):
        rows, cols = x.shape
        y = np.empty_like(x)
        args = pack_args("SoftmaxArgs", rows=rows, cols=cols, temperature=temperature, log=int(log))
        self.dispatch("softmax_f32", args, [x, y], rows, self.rows_tg)
        return y

    def argmax(self, x):
        rows, cols = x.shape
        idx = np.empty(rows, np.int32)
        self.dispatch("argmax_f32", pack_args("TopkArgs", rows=rows, cols=cols, k=1), [x, idx], rows, self.rows_tg)
        return idx

    def topk(self, x, k):
        rows, cols = x.shape
        vals, idx = np.empty((rows, k), np.float32), np.empty((rows, k), np.int32)
        self.dispatch("topk_f32", pack_args("TopkArgs", rows=rows, cols=cols, k=k), [x, vals, idx], rows, self.rows_tg)
        return vals, idx

    # q: [Tq, Hq, D]; k, v: [Hkv, cap, D]; mask: U8[Tq, Tn] or None (causal, Tn = Tq)
    def attention(self, q, k, v, prefix_len, mask=None, scale=None):
        n_q, n_heads, d = q.shape
        n_new = n_q if mask is None else mask.shape[1]
        scale = 1.0 / np.sqrt(d) if scale is None else scale
        o = np.empty_like(q)
        args = pack_args("AttentionArgs", n_q=n_q, n_new=n_new, n_heads=n_heads, n_kv_heads=k.shape[0], head_dim=d,
                         capacity=k.shape[1], prefix_len=prefix_len, causal=int(mask is None), scale=scale)
        kv = "f16" if k.dtype == np.float16 else "f32"  # the cache's element type picks the kernel
        name = f"attention_{kv}_d64" if d <= 64 else f"attention_{kv}_d128" if d <= 128 else f"attention_{kv}_d256"
        m = np.ascontiguousarray(mask, np.uint8) if mask is not None else np.zeros(1, np.uint8)
        self.dispatch(name, args, [q, k, v, m, o], (n_heads, n_q), self.rows_tg)
        return o

    # new: [T, Hkv, D]; cache: [Hkv, cap, D] (updated in place)
    def kv_write(self, new, cache, start):
        t, hkv, d = new.shape
        args = pack_args("KvCopyArgs", rows=t, n_kv_heads=hkv, head_dim=d, capacity=cache.shape[1], dst_start=start)
        name = "kv_write_f16" if cache.dtype == np.float16 else "kv_write_f32"
        self.dispatch(name, args, [new, cache], (_ceil(d, 32), hkv, t), 32)
        return cache

    def kv_move_rows(self, cache, src, dst):
        hkv, cap, d = cache.shape
        m = len(src)
        if m == 0:
            return cache  # the host skips empty moves
        assert m <= C["kMoveMaxRows"]
        args = pack_args("KvCopyArgs", rows=m, n_kv_heads=hkv, head_dim=d, capacity=cap, dst_start=dst)
        name = "kv_move_rows_f16" if cache.dtype == np.float16 else "kv_move_rows_f32"
        self.dispatch(name, args, [np.ascontiguousarray(src, np.int32), cache], (_ceil(d, 32), hkv),
                      (32, min(m, 8)), tg_mem=(m * 128,))
        return cache

    # x: [T, K]; w: raw GGUF rows [N, row_bytes]; variant "vec" | "mat" | None (host's choice)
    def matmul(self, x, w, wtype, n, k, variant=None):
        t = x.shape[0]
        variant = variant or ("vec" if t <= C["kVecMaxRows"] else "mat")
        suffix = wtype.lower().replace("_k", "_K")
        y = np.empty((t, n), np.float32)
        args = pack_args("MatmulArgs", rows=t, n=n, k=k, wtype=GGML_TYPE[wtype])
        nsg = C["kVecSimdgroups"]
        mat_grid = (_ceil(n, C["kMatTileX"]), _ceil(t, C["kMatTileY"]))
        mat_tg = (C["kMatTileX"], C["kMatTileY"])
        w = np.ascontiguousarray(w).view(np.uint8)
        if wtype in ("F32", "F16", "BF16"):
            wv = w.view({"F32": np.float32, "F16": np.float16, "BF16": np.uint16}[wtype])
            if variant == "vec":
                self.dispatch(f"matmul_{suffix}_vec", args, [wv, x, y], (_ceil(n, 2 * nsg), t), 32 * nsg)
            else:
                self.dispatch(f"matmul_{suffix}_mat", args, [wv, x, y], mat_grid, mat_tg)
            return y
        be = BLOCK[wtype]
        xq = np.empty((t, k), np.int8)
        xd = np.empty((t, k // be), np.float32)
        xs = np.empty((t, k // 16 if be == 256 else k // 32), np.int32)
        self.dispatch(f"quantize_q8_{be}", args, [x, xq, xd, xs], (k // be, t), be)
        if variant == "vec":
            self.dispatch(f"matmul_{suffix}_vec", args, [w, xq, xd, xs, y], (_ceil(n, nsg), t), 32 * nsg)
        else:
            self.dispatch(f"matmul_{suffix}_mat", args, [w, xq, xd, xs, y], mat_grid, mat_tg)
        return y

    def embedding(self, w, wtype, v, k, ids):
        t = len(ids)
        y = np.empty((t, k), np.float32)
        args = pack_args("EmbeddingArgs", rows=t, vocab=v, k=k, wtype=GGML_TYPE[wtype])
        w = np.ascontiguousarray(w).view(np.uint8)
        if wtype in ("F32", "F16", "BF16"):
            w = w.view({"F32": np.float32, "F16": np.float16, "BF16": np.uint16}[wtype])
        suffix = wtype.lower().replace("_k", "_K")
        self.dispatch(f"embedding_{suffix}", args, [w, ids, y], (_ceil(k, C["kFlatThreads"]), t), C["kFlatThreads"])
        return y
