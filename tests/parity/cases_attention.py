"""Tree attention against a float64 numpy reference: causal prefill, decode, random trees, Tn > Tq."""

import numpy as np

from eyas import _core
from tests.parity import ParityCase


def visible_new(mask, n_q, n_new, i):
    """New-slot indices query i sees (mask None = causal, query i is new slot n_new - n_q + i)."""
    if mask is None:
        return np.arange(n_new - n_q + i + 1)
    return np.nonzero(mask[i])[0]


def attention_ref(q, k_cache, v_cache, prefix_len, mask=None, scale=None):
    n_q, n_heads, d = q.shape
    n_new = n_q if mask is None else mask.shape[1]
    group = n_heads // k_cache.shape[0]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    out = np.zeros(q.shape, np.float64)
    for i in range(n_q):
        slots = np.concatenate([np.arange(prefix_len), prefix_len + visible_new(mask, n_q, n_new, i)]).astype(int)
        if len(slots) == 0:
            continue
        for h in range(n_heads):
            k = k_cache[h // group, slots].astype(np.float64)
            v = v_cache[h // group, slots].astype(np.float64)
            s = k @ q[i, h].astype(np.float64) * scale
            p = np.exp(s - s.max())
            out[i, h] = (p / p.sum()) @ v
    return out.astype(np.float32)


def random_tree_mask(rng, n):
    """Ancestor-or-self mask of a random tree whose parents precede their children."""
    parent = [-1] + [int(rng.integers(0, j)) for j in range(1, n)]
    mask = np.zeros((n, n), np.uint8)
    for i in range(n):
        j = i
        while j >= 0:
            mask[i, j] = 1
            j = parent[j]
    return mask


def make_inputs(rng, n_q, n_heads, n_kv, d, prefix_len, mask_kind, n_new=None, spare=3):
    n_new = n_q if n_new is None else n_new
    cap = prefix_len + n_new + spare
    inputs = {
        "q": rng.standard_normal((n_q, n_heads, d), dtype=np.float32),
        "k": rng.standard_normal((n_kv, cap, d), dtype=np.float32),
        "v": rng.standard_normal((n_kv, cap, d), dtype=np.float32),
        "prefix_len": prefix_len,
        "mask": None,
    }
    if mask_kind == "tree":
        inputs["mask"] = random_tree_mask(rng, n_new)[n_new - n_q:]
    return inputs


def _case(n_q, n_heads, n_kv, d, prefix_len, mask_kind, n_new=None, kv_dtype=np.float32):
    label = f"q{n_q}-h{n_heads}/{n_kv}-d{d}-p{prefix_len}-{mask_kind}" + (f"-n{n_new}" if n_new else "")
    label += "-kvf16" if kv_dtype == np.float16 else ""

    def make(rng):  # an F16 cache (kv_dtype="f16"): the reference reads the same half values
        a = make_inputs(rng, n_q, n_heads, n_kv, d, prefix_len, mask_kind, n_new)
        a["k"], a["v"] = a["k"].astype(kv_dtype), a["v"].astype(kv_dtype)
        return a

    return ParityCase(
        "attention", label, make,
        lambda a: _core.ops.attention(a["q"], a["k"], a["v"], a["prefix_len"], a["mask"]),
        lambda a: attention_ref(a["q"], a["k"], a["v"], a["prefix_len"], a["mask"]),
        tol="attention")


CASES = [
    _case(1, 9, 3, 64, 40, "causal"),  # decode, SmolLM2 heads
    _case(1, 2, 2, 16, 0, "causal"),  # first token: only itself
    _case(7, 4, 1, 64, 0, "causal"),  # prefill
    _case(33, 4, 2, 128, 5, "causal"),
    _case(17, 8, 2, 256, 31, "tree"),
    _case(9, 6, 2, 80, 16, "tree"),  # D not a multiple of 64
    _case(5, 3, 3, 48, 100, "tree"),
    _case(4, 4, 1, 64, 12, "tree", n_new=11),  # drafter: earlier depths + frontier
    _case(1, 2, 1, 32, 3, "tree", n_new=6),
    _case(1, 9, 3, 64, 40, "causal", kv_dtype=np.float16),
    _case(17, 8, 2, 256, 31, "tree", kv_dtype=np.float16),
    _case(9, 6, 2, 80, 16, "tree", kv_dtype=np.float16),
]
