"""KV cache copies: append rows (kv_write) and compact an accepted path (kv_move_rows); bit-exact."""

import numpy as np

from eyas import _core
from tests.parity import ParityCase


def kv_write_ref(new, cache, start):
    out = cache.copy()
    out[:, start:start + new.shape[0]] = new.transpose(1, 0, 2)
    return out


def kv_move_rows_ref(cache, src, dst):
    out = cache.copy()
    out[:, dst:dst + len(src)] = cache[:, src]  # all sources read before any write
    return out


def _run_write(a):
    cache = a["cache"].copy()
    _core.ops.kv_write(a["new"], cache, a["start"])
    return cache


def _run_move(a):
    cache = a["cache"].copy()
    _core.ops.kv_move_rows(cache, a["src"], a["dst"])
    return cache


def _write_case(t, hkv, d, cap, start, cache_dtype=np.float32):
    # An F16 cache (kv_dtype="f16") takes the rows rounded to nearest even, as numpy's astype does.
    def make(rng):
        return {"new": rng.standard_normal((t, hkv, d), dtype=np.float32) * 3,
                "cache": rng.standard_normal((hkv, cap, d), dtype=np.float32).astype(cache_dtype), "start": start}

    kind = "-f16" if cache_dtype == np.float16 else ""
    return ParityCase("kv_write", f"t{t}-h{hkv}-d{d}-cap{cap}-at{start}{kind}", make, _run_write,
                      lambda a: kv_write_ref(a["new"], a["cache"], a["start"]), tol="exact")


def _move_case(label, src, dst, hkv=3, d=64, cap=40, cache_dtype=np.float32):
    def make(rng):
        return {"cache": rng.standard_normal((hkv, cap, d), dtype=np.float32).astype(cache_dtype),
                "src": np.array(src, np.int32), "dst": dst}

    return ParityCase("kv_move_rows", label, make, _run_move,
                      lambda a: kv_move_rows_ref(a["cache"], a["src"], a["dst"]), tol="exact")


CASES = [
    _write_case(1, 3, 64, 10, 9),
    _write_case(5, 2, 16, 8, 0),
    _write_case(64, 4, 128, 100, 30),  # large enough to use the thread pool
    _move_case("path", [10, 12, 15, 20], 10),
    _move_case("identity", [5, 6, 7], 5),
    _move_case("overlap-backward", [7, 6, 5], 5),  # sources overwritten if moved naively
    _move_case("out-of-order", [20, 3, 31], 2),
    _move_case("empty", [], 4),
    _move_case("large", list(range(100, 164, 2)), 90, hkv=8, d=128, cap=200),
    _write_case(3, 3, 64, 12, 4, np.float16),
    _write_case(64, 4, 128, 100, 30, np.float16),
    _move_case("path-f16", [10, 12, 15, 20], 10, cache_dtype=np.float16),
    _move_case("overlap-backward-f16", [7, 6, 5], 5, cache_dtype=np.float16),
]
