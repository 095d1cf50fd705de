"""A plain numpy forward of every spec the loaders produce (docs/model_spec.md), in float32.

The reference for the runtime's model parity tests: weights are dequantized with gguf.quants, and
the object offers the runtime's forward/commit/truncate/reset interface so the generation loop
can run on it too.
"""

from __future__ import annotations

import numpy as np

from eyas.drafters.eagle3 import default_aux_layers
from eyas.loaders.dtypes import FLOAT_TYPES, block_size, dequantize
from eyas.models.common import layer_kinds


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps) * w).astype(np.float32)


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def rope(x: np.ndarray, pos: np.ndarray, inv_freq: np.ndarray, rot_dim: int, style: str) -> np.ndarray:
    """x: [T, heads, D]; rotates the first rot_dim dims of each head at positions pos: [T]."""
    ang = pos.astype(np.float64)[:, None] * inv_freq.astype(np.float64)[None, :]  # [T, rot/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    out = x.astype(np.float64).copy()
    if style == "neox":
        a, b = out[..., : rot_dim // 2].copy(), out[..., rot_dim // 2 : rot_dim].copy()
        out[..., : rot_dim // 2], out[..., rot_dim // 2 : rot_dim] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = out[..., 0:rot_dim:2].copy(), out[..., 1:rot_dim:2].copy()
        out[..., 0:rot_dim:2], out[..., 1:rot_dim:2] = a * cos - b * sin, a * sin + b * cos
    return out.astype(np.float32)


# A scaled activation this close to a rounding boundary k + 1/2 (relative: ~30 float32 ulps, since
# sums with cancellation lose more than one) may round the other way in the runtime, whose float32
# inputs differ from this float64-leaning reference in the last bits.
TIE_REL = 4e-6
# A router logit gap below this may order the experts differently in the runtime.
ROUTER_TIE_MARGIN = 1e-4


def q8_roundtrip(x: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """x [rows, K] after per-block symmetric int8 quantization (as the runtime quantizes matmul
    activations), and per row whether some element sat on a rounding boundary (see TIE_REL)."""
    xb = x.astype(np.float32).reshape(*x.shape[:-1], -1, block)
    d = (np.abs(xb).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    scaled = np.clip(xb * inv, -127, 127)
    q = np.rint(scaled)
    near = np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) < TIE_REL * np.maximum(np.abs(scaled), 1)
    return (q * d).astype(np.float32).reshape(x.shape), near.reshape(x.shape[0], -1).any(axis=1)


class ReferenceTransformer:
    """Same interface as `_core.Transformer`: forward (plain or tree), commit, truncate, reset.

    quantized_activations=True rounds each matmul input to int8 per block for quantized weights,
    as the runtime does, so quantized models can be compared tightly; False is the plain fp32 forward.
    `ambiguous` collects the positions whose forward met a rounding (or expert-routing) near-tie:
    the runtime may legitimately take the other side there, and every later position sees the result.
    """

    def __init__(self, spec: dict, weights: dict, *, max_context: int = 512, aux_layers=None, device=None,
                 quantized_activations: bool = False):
        self.spec = spec
        self.w = {name: dequantize(*entry) for name, entry in weights.items()}
        self.act_block = {}
        if quantized_activations:
            self.act_block = {name: block_size(dt)[0] for name, (_, dt, _) in weights.items()
                              if dt not in FLOAT_TYPES}
        if spec["tie_embeddings"]:
            self.w["output"] = self.w["token_embd"]
            if "token_embd" in self.act_block:
                self.act_block["output"] = self.act_block["token_embd"]
        L, Hkv, D = spec["num_layers"], spec["num_kv_heads"], spec["head_dim"]
        self.aux_layers = list(aux_layers) if aux_layers is not None else default_aux_layers(L)
        self.capacity = max_context
        self.k = np.zeros((L, max_context, Hkv, D), np.float32)
        self.v = np.zeros_like(self.k)
        self.length = 0
        self.ambiguous: set[int] = set()
        self._rows = np.zeros(0, np.int64)  # absolute positions of the current forward's rows

    @property
    def weight_bytes(self) -> int:
        """As the runtime's: what a decode step reads whole (float32 here)."""
        return sum(w.nbytes for name, w in self.w.items() if name != "token_embd")

    @property
    def state_bytes(self) -> int:
        return 2 * self.length * self.k.shape[0] * self.k.shape[2] * self.k.shape[3] * self.k.itemsize

    def reset(self) -> None:
        self.length = 0
        self.ambiguous.clear()

    def truncate(self, n: int) -> None:
        if not 0 <= n <= self.length:
            raise ValueError(f"[truncate] n={n} outside [0, {self.length}]")
        self.length = n

    def commit(self, nodes) -> None:
        nodes = np.asarray(nodes, dtype=np.int64)
        n = self.length
        self.k[:, n : n + len(nodes)] = self.k[:, n + nodes]
        self.v[:, n : n + len(nodes)] = self.v[:, n + nodes]
        self.length += len(nodes)

    def prefill(self, tokens, *, logits="last", capture_aux=False) -> dict:
        out = self.forward(tokens, logits=logits, capture_aux=capture_aux)
        self.commit(np.arange(len(np.asarray(tokens).reshape(-1))))
        return out

    def decode(self, token, *, logits="last", capture_aux=False) -> dict:
        return self.prefill(np.array([token]), logits=logits, capture_aux=capture_aux)

    def forward(self, tokens, *, mask=None, depths=None, logits="last", capture_aux=False) -> dict:
        s, w = self.spec, self.w
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
        T, n = len(tokens), self.length
        if n + T > self.capacity:
            raise ValueError(f"[forward] {n}+{T} tokens exceed capacity {self.capacity}")
        if mask is None:
            mask = np.tril(np.ones((T, T), np.uint8))
            depths = np.arange(T)
        pos = n + np.asarray(depths, dtype=np.int64)
        self._rows = n + np.arange(T)
        visible = np.concatenate([np.ones((T, n), bool), np.asarray(mask) != 0], axis=1)  # [T, n+T]
        Hq, Hkv, D, eps = s["num_heads"], s["num_kv_heads"], s["head_dim"], s["rms_eps"]
        x = w["token_embd"][tokens]
        aux = []
        kinds = s.get("layers") or layer_kinds(s["num_layers"], range(s["num_layers"]) if s["moe"] else ())
        for i in range(s["num_layers"]):
            p = f"blk.{i}."
            if i in self.aux_layers:
                aux.append(x.copy())
            h = rms_norm(x, w[p + "attn_norm"], eps)
            q, k, v = (self._mm(h, p + n_) for n_ in ("attn_q", "attn_k", "attn_v"))
            if s["qkv_bias"]:
                q, k, v = q + w[p + "attn_q.bias"], k + w[p + "attn_k.bias"], v + w[p + "attn_v.bias"]
            gate = None
            if s["attn_output_gate"]:
                qg = q.reshape(T, Hq, 2 * D)
                q, gate = qg[..., :D], qg[..., D:].reshape(T, Hq * D)
            q, k, v = q.reshape(T, Hq, D), k.reshape(T, Hkv, D), v.reshape(T, Hkv, D)
            if s["qk_norm"]:
                q, k = rms_norm(q, w[p + "attn_q_norm"], eps), rms_norm(k, w[p + "attn_k_norm"], eps)
            q = rope(q, pos, s["rope_inv_freq"], s["rot_dim"], s["rope_style"])
            k = rope(k, pos, s["rope_inv_freq"], s["rot_dim"], s["rope_style"])
            self.k[i, n : n + T], self.v[i, n : n + T] = k, v
            keys = np.repeat(self.k[i, : n + T], Hq // Hkv, axis=1)  # [S, Hq, D]
            vals = np.repeat(self.v[i, : n + T], Hq // Hkv, axis=1)
            scores = np.einsum("thd,shd->hts", q.astype(np.float64), keys.astype(np.float64)) / np.sqrt(D)
            scores = np.where(visible[None], scores, -np.inf)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            attn = np.einsum("hts,shd->thd", probs, vals.astype(np.float64)).reshape(T, Hq * D).astype(np.float32)
            if gate is not None:
                attn = attn * sigmoid(gate)
            x = x + self._mm(attn, p + "attn_output")
            h = rms_norm(x, w[p + "ffn_norm"], eps)
            x = x + (self._moe(h, p) if kinds[i]["ffn"] == "moe_ffn" else self._dense(h, p, ""))
        out = {}
        if capture_aux:
            out["aux"] = np.concatenate(aux, axis=1)
        if logits != "none":
            last = slice(None) if logits == "all" else slice(-1, None)
            out["logits"] = self._mm(rms_norm(x[last], w["output_norm"], eps), "output", rows=self._rows[last])
        return out

    def _mm(self, x: np.ndarray, name: str, e: int | None = None, rows: np.ndarray | None = None) -> np.ndarray:
        """x @ W.T (W = expert e of a stack when given), with the runtime's activation rounding if enabled.
        rows: absolute positions of x's rows (default: the whole forward's)."""
        w = self.w[name] if e is None else self.w[name][e]
        if name in self.act_block:
            x, near = q8_roundtrip(x, self.act_block[name])
            self.ambiguous.update(int(r) for r in (self._rows if rows is None else rows)[near])
        return x @ w.T

    def _dense(self, h, p, suffix, e=None, rows=None):
        g, u, d = (p + f"ffn_{n_}{suffix}" for n_ in ("gate", "up", "down"))
        return self._mm(silu(self._mm(h, g, e, rows)) * self._mm(h, u, e, rows), d, e, rows)

    def _moe(self, h, p):
        moe = self.spec["moe"]
        logits = self._mm(h, p + "ffn_gate_inp").astype(np.float64)
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        out = np.zeros_like(h)
        k = moe["top_k"]
        for t in range(h.shape[0]):
            order = np.lexsort((np.arange(probs.shape[1]), -probs[t]))
            top = order[:k]
            if len(order) > k and logits[t, order[k - 1]] - logits[t, order[k]] < ROUTER_TIE_MARGIN:
                self.ambiguous.add(int(self._rows[t]))  # the last chosen and first unchosen expert nearly tie
            wts = probs[t, top] / (probs[t, top].sum() if moe["norm_topk_prob"] else 1.0)
            for e, wt in zip(top, wts):
                out[t] += np.float32(wt) * self._dense(h[t : t + 1], p, "_exps", e, self._rows[t : t + 1])[0]
        if moe["shared_expert_intermediate_size"]:
            shared = self._dense(h, p, "_shexp")
            if p + "ffn_gate_inp_shexp" in self.w:
                shared = shared * sigmoid(self._mm(h, p + "ffn_gate_inp_shexp"))
            out = out + shared
        return out
