"""EAGLE-3 drafter: a numpy reference of the forward (reference eagle3.md §3), checkpoint writers for
the SpecForge / EAGLE / speculators layouts, and parity cases for the C++ Eagle3Drafter."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eyas import _core
from tests.parity import ParityCase
from tests.reference_model import dequantize, rms_norm, rope, silu

# Checkpoint tensor name (SpecForge layout) -> canonical drafter name.
SPECFORGE_NAMES = {
    "fc.weight": "fc", "midlayer.hidden_norm.weight": "hidden_norm", "midlayer.input_layernorm.weight": "input_norm",
    "midlayer.self_attn.q_proj.weight": "attn_q", "midlayer.self_attn.k_proj.weight": "attn_k",
    "midlayer.self_attn.v_proj.weight": "attn_v", "midlayer.self_attn.o_proj.weight": "attn_output",
    "midlayer.post_attention_layernorm.weight": "post_norm", "midlayer.mlp.gate_proj.weight": "ffn_gate",
    "midlayer.mlp.up_proj.weight": "ffn_up", "midlayer.mlp.down_proj.weight": "ffn_down",
    "norm.weight": "output_norm", "lm_head.weight": "output",
}


def random_checkpoint(seed, target_spec, *, hidden=None, heads=4, kv_heads=2, head_dim=None, inter=96,
                      draft_vocab=None, own_embed=False, fc_bias=False, scale=1.0):
    """(config dict, {SpecForge tensor name: float32 / int64 / bool array}) of a random drafter."""
    rng = np.random.default_rng(seed)
    V, Ht, L = target_spec["vocab_size"], target_spec["hidden_size"], target_spec["num_layers"]
    H = hidden or Ht
    hd = head_dim or H // heads
    Vd = draft_vocab or V
    t = {}

    def mat(name, rows, cols):
        t[name] = (rng.standard_normal((rows, cols)) * scale * cols ** -0.5).astype(np.float32)

    mat("fc.weight", H, 3 * Ht)
    for n in ("midlayer.hidden_norm.weight", "midlayer.input_layernorm.weight",
              "midlayer.post_attention_layernorm.weight", "norm.weight"):
        t[n] = (1.0 + rng.standard_normal(H) * 0.1).astype(np.float32)
    mat("midlayer.self_attn.q_proj.weight", heads * hd, 2 * H)
    mat("midlayer.self_attn.k_proj.weight", kv_heads * hd, 2 * H)
    mat("midlayer.self_attn.v_proj.weight", kv_heads * hd, 2 * H)
    mat("midlayer.self_attn.o_proj.weight", H, heads * hd)
    mat("midlayer.mlp.gate_proj.weight", inter, H)
    mat("midlayer.mlp.up_proj.weight", inter, H)
    mat("midlayer.mlp.down_proj.weight", H, inter)
    mat("lm_head.weight", Vd, H)
    t["lm_head.weight"] *= 4.0  # peakier draft distributions, fewer near-ties
    if fc_bias:
        t["fc.bias"] = (rng.standard_normal(H) * 0.1).astype(np.float32)
    if own_embed:
        t["embed_tokens.weight"] = rng.standard_normal((V, H)).astype(np.float32)
    used = np.sort(rng.choice(V, Vd, replace=False))
    t["d2t"] = (used - np.arange(Vd)).astype(np.int64)
    t["t2d"] = np.isin(np.arange(V), used)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": H,
        "intermediate_size": inter, "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": hd,
        "num_hidden_layers": 1, "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 2048, "tie_word_embeddings": False, "vocab_size": V, "draft_vocab_size": Vd,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, L // 2, L - 3], "use_aux_hidden_state": True},
    }
    if H != Ht:
        config["target_hidden_size"] = Ht
    return config, t


def write_safetensors(path: Path, tensors: dict, dtype: str = "F32") -> None:
    """Minimal safetensors writer: float matrices stored as `dtype` (F32 / F16 / BF16), others as-is."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        if a.dtype == np.float32 and a.ndim == 2 and dtype != "F32":
            if dtype == "F16":
                a = a.astype(np.float16)
            else:  # BF16, round to nearest even
                u = a.view(np.uint32).astype(np.uint64)
                a = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            code = dtype
        else:
            code = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.bool_): "BOOL",
                    np.dtype(np.int32): "I32"}[a.dtype]
        raw = a.tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def write_checkpoint(folder: Path, config: dict, tensors: dict, *, layout="specforge", dtype="F32") -> Path:
    """Write a drafter folder in one of the three layouts (reference §1.2, §1.5)."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg, t = dict(config), dict(tensors)
    if layout == "eagle":
        cfg["architectures"] = ["LlamaForCausalLM"]
    elif layout == "speculators":
        layer = {k: cfg.pop(k) for k in list(cfg) if k not in ("draft_vocab_size", "target_hidden_size",
                                                                "eagle_config", "architectures")}
        ids = cfg.pop("eagle_config")["eagle_aux_hidden_state_layer_ids"]
        cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
               "transformer_layer_config": layer, "draft_vocab_size": cfg["draft_vocab_size"],
               "norm_before_residual": False, "eagle_aux_hidden_state_layer_ids": ids,
               "speculators_config": {"algorithm": "eagle3"}}
        if "target_hidden_size" in config:
            cfg["target_hidden_size"] = config["target_hidden_size"]
        t = {k.replace("midlayer.", "layers.0."): v for k, v in t.items()}
    (folder / "config.json").write_text(json.dumps(cfg))
    write_safetensors(folder / "model.safetensors", t, dtype)
    return folder


class DrafterRef:
    """numpy float64/32 forward of a canonical drafter (weights dict as eyas.drafters builds it)."""

    def __init__(self, spec: dict, weights: dict, d2t):
        self.s = spec
        self.w = {k: dequantize(*v) for k, v in weights.items()}
        self.d2t = None if d2t is None else np.asarray(d2t)
        self.k = np.zeros((0, spec["num_kv_heads"], spec["head_dim"]), np.float32)  # committed keys
        self.v = self.k.copy()

    def layer(self, g, tokens, pos, ctx_k, ctx_v, visible):
        """g: [T, H] features; visible[i]: bool over ctx + the T new rows. Returns (h2 [T,H], k, v)."""
        s, w = self.s, self.w
        eps, nh, nkv, hd = s["rms_eps"], s["num_heads"], s["num_kv_heads"], s["head_dim"]
        T = len(tokens)
        e = w["token_embd"][tokens]
        gn = rms_norm(g, w["hidden_norm"], eps)
        u = np.concatenate([rms_norm(e, w["input_norm"], eps), gn], axis=1)
        q = (u @ w["attn_q"].T).reshape(T, nh, hd)
        k = (u @ w["attn_k"].T).reshape(T, nkv, hd)
        v = (u @ w["attn_v"].T).reshape(T, nkv, hd)
        q = rope(q, pos, s["rope_inv_freq"], s["rot_dim"], "neox")
        k = rope(k, pos, s["rope_inv_freq"], s["rot_dim"], "neox")
        K, Vv = np.concatenate([ctx_k, k]), np.concatenate([ctx_v, v])
        o = np.zeros((T, nh, hd), np.float64)
        for i in range(T):
            for h in range(nh):
                kv = h // (nh // nkv)
                sc = K[visible[i], kv].astype(np.float64) @ q[i, h] / np.sqrt(hd)
                p = np.exp(sc - sc.max())
                o[i, h] = (p / p.sum()) @ Vv[visible[i], kv]
        attn = o.reshape(T, nh * hd).astype(np.float32) @ w["attn_output"].T
        h1 = (gn if s["norm_before_residual"] else g) + attn
        n = rms_norm(h1, w["post_norm"], eps)
        h2 = h1 + (silu(n @ w["ffn_gate"].T) * (n @ w["ffn_up"].T)) @ w["ffn_down"].T
        return h2.astype(np.float32), k, v

    def logits(self, h):
        x = rms_norm(h, self.w["output_norm"], self.s["rms_eps"]) if self.s["norm_output"] else h
        return (x @ self.w["output"].T).astype(np.float32)

    def ingest(self, aux, tokens):
        """Runs the committed pairs; returns (h2 [T, H], logits of the last row [Vd])."""
        g = aux @ self.w["fc"].T + self.w.get("fc.bias", 0.0)
        n0, T = len(self.k), len(tokens)
        pos = np.arange(n0, n0 + T)
        visible = [np.arange(n0 + T) <= n0 + i for i in range(T)]
        h2, k, v = self.layer(g.astype(np.float32), np.asarray(tokens), pos, self.k, self.v, visible)
        self.k, self.v = np.concatenate([self.k, k]), np.concatenate([self.v, v])
        self.root_h, self.root_logits, self.root = h2[-1], self.logits(h2[-1:])[0], int(tokens[-1])
        return h2, self.root_logits

    def level_runner(self):
        """Callable(level, frontier parent rows, frontier tokens, frontier mask) -> logits [F, Vd] for the tree
        builder, keeping the tree K/V and the previous batch's outputs like the C++ drafter does."""
        state = {"k": self.k[:0], "v": self.v[:0], "h": self.root_h[None]}
        n = len(self.k)

        def run(level, parent_rows, tokens, mask):
            g = state["h"][parent_rows]
            F = len(tokens)
            visible = [np.concatenate([np.ones(n, bool), mask[j].astype(bool)]) for j in range(F)]
            ctx_k, ctx_v = np.concatenate([self.k, state["k"]]), np.concatenate([self.v, state["v"]])
            h2, k, v = self.layer(g, np.asarray(tokens), np.full(F, n + level - 1), ctx_k, ctx_v, visible)
            state["k"], state["v"], state["h"] = np.concatenate([state["k"], k]), np.concatenate([state["v"], v]), h2
            return self.logits(h2)

        return run

    def expand(self, top_k, depth, total):
        """The tree the C++ drafter should build, driving _core's TreeBuilder with reference logits."""
        Vd = self.s["draft_vocab_size"]
        b = _core.speculative.TreeBuilder(top_k, depth, total, Vd, d2t=None if self.d2t is None else self.d2t)
        b.start(self.root, self.root_logits)
        run = self.level_runner()
        rows = np.zeros(top_k, np.int64)
        while b.wants_level:
            rows = b.frontier_parent_rows if b.level > 1 else np.zeros(len(b.frontier_tokens), np.int64)
            b.extend(run(b.level, rows, b.frontier_tokens, b.frontier_mask))
        return b.finish()


def tiny_target(seed=3, **kw):
    from tests.test_transformer_reference import make_model

    args = dict(vocab=96, hidden=64, layers=6, heads=4, kv_heads=2, head_dim=16, inter=64)
    args.update(kw)
    return make_model(seed, **args)


def build(target_spec, target_core, config, tensors, weight_type="f32"):
    from eyas.drafters.checkpoint import Tensor
    from eyas.drafters.eagle3 import build_drafter

    def wrap(a):
        a = np.ascontiguousarray(a)
        code = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.bool_): "BOOL"}[a.dtype]
        return Tensor(a.reshape(-1).view(np.uint8), code, list(a.shape))

    return build_drafter(config, {k: wrap(v) for k, v in tensors.items()}, target_spec, target_core,
                         weight_type=weight_type)


def _ingest_case(label, T, **kw):
    def make(rng):
        spec, core, _ = tiny_target()
        cfg, t = random_checkpoint(int(rng.integers(1 << 30)), spec, **kw)
        d = build(spec, core, cfg, t)
        aux = rng.standard_normal((T, 3 * spec["hidden_size"])).astype(np.float32)
        tokens = rng.integers(0, spec["vocab_size"], T).astype(np.int32)
        return {"d": d, "aux": aux, "tokens": tokens}

    def run(a):
        rt = _core.speculative.Eagle3Drafter(a["d"].spec, a["d"].weights, a["d"].d2t, max_context=512)
        rt.ingest(a["aux"][: a["aux"].shape[0] // 2], a["tokens"][: a["aux"].shape[0] // 2])  # two calls: KV carries
        rt.ingest(a["aux"][a["aux"].shape[0] // 2:], a["tokens"][a["aux"].shape[0] // 2:])
        return rt.last_hidden, rt.last_logits

    def ref(a):
        r = DrafterRef(a["d"].spec, a["d"].weights, a["d"].d2t)
        h2, logits = r.ingest(a["aux"], a["tokens"])
        return h2[-1], logits

    return ParityCase("eagle3_ingest", label, make, run, ref, tol="f32_reduce")


CASES = [
    _ingest_case("T2-shared-embed", 2, draft_vocab=40),
    _ingest_case("T9-own-embed-H32", 9, hidden=32, heads=2, kv_heads=1, own_embed=True, fc_bias=True),
    _ingest_case("T140-chunks", 140, draft_vocab=96, heads=8, kv_heads=2, head_dim=16),
]
