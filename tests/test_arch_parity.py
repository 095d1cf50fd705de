"""Every architecture against Hugging Face transformers on tiny random models, from HF folders and GGUF files.

F32 GGUF and safetensors must match transformers' float32 forward; F16 / Q8_0 / Q4_1 GGUF must
match the numpy reference forward on the same dequantized weights, with matmul inputs rounded to
int8 per block as the runtime does (their error vs HF is the quantization's, not ours). Gated attention has no plain transformers architecture, so it is
checked against tests/reference_model.py only.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import tests.parity as parity  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from tests.fixtures import backend, tiny_models  # noqa: E402

QUANTS = ("F16", "Q8_0", "Q4_1")
PROMPT, TOTAL = 9, 14  # prefill 9 tokens, then 5 single-token decode steps


@pytest.fixture(scope="module", params=list(tiny_models.VARIANTS))
def built(request, tmp_path_factory):
    return tiny_models.build(request.param, tmp_path_factory.mktemp("arch"), ("F32", *QUANTS))


def _tokens(seed=0):
    return np.random.default_rng(seed).integers(0, tiny_models.VOCAB, TOTAL)


@pytest.mark.parametrize("source", ["hf", "F32"])
def test_matches_transformers(built, source):
    toks = _tokens()
    want = tiny_models.hf_logits(built["model"], toks)
    m = load_model(built[source])
    got = backend.run_logits(backend.make_model(m.spec, m.weights), toks, PROMPT)
    parity.assert_close(got, want, "f32_reduce", f"{source} vs transformers")
    assert np.array_equal(got.argmax(1), want.argmax(1))


@pytest.mark.parametrize("qtype", QUANTS)
def test_quantized_matches_reference(built, qtype):
    """Tight agreement up to the first position where the reference met a rounding near-tie of an
    activation (or of the expert router): from there on the runtime may round the other way, which
    moves that position and every later one. Token sequences are added until TOTAL rows were compared
    tightly (decode rows have prefill's bits: tests/test_transformer_invariance.py)."""
    if not backend.have_runtime():
        pytest.skip("needs _core.Transformer (the reference would be compared with itself)")
    m = load_model(built[qtype])
    runtime = backend.make_model(m.spec, m.weights)
    ref = backend.make_model(m.spec, m.weights, reference=True, quantized_activations=True)
    tol = "f32_reduce" if qtype == "F16" else "quant"
    checked = 0
    for seed in range(1, 49):
        toks = _tokens(seed)
        got = backend.run_logits(runtime, toks, PROMPT)
        want = backend.run_logits(ref, toks, PROMPT)
        assert np.all(np.isfinite(got)), f"{qtype}: non-finite logits"
        clean = min(ref.ambiguous, default=TOTAL)
        parity.assert_close(got[:clean], want[:clean], tol, f"{qtype} vs reference, tokens seed {seed}")
        checked += clean
        if checked >= TOTAL:
            return
    pytest.fail(f"only {checked} rows free of rounding near-ties in 48 sequences")


def test_gguf_llama_is_interleaved_and_hf_is_neox(built):
    hf, gg = load_model(built["hf"]).spec, load_model(built["F32"]).spec
    assert hf["rope_style"] == "neox"
    assert gg["rope_style"] == ("interleaved" if gg["arch"] == "llama" else "neox")
    np.testing.assert_allclose(gg["rope_inv_freq"], hf["rope_inv_freq"], rtol=1e-6)
    for key in ("arch", "num_layers", "num_heads", "num_kv_heads", "head_dim", "qkv_bias", "qk_norm", "moe", "layers",
                "tie_embeddings"):
        assert gg[key] == hf[key], key


def _gated_folder(root, seed=0):
    """An HF-style Qwen3 folder whose q_proj also emits a per-head output gate (Qwen3.5 style)."""
    from safetensors.numpy import save_file

    from tests.fixtures import tiny_tokenizer

    cfg = dict(tiny_models.BASE, model_type="qwen3", attn_output_gate=True, tie_word_embeddings=False,
               rope_theta=10000.0, hidden_act="silu")
    rng = np.random.default_rng(seed)
    H, Hq, Hkv, D, I, V = 64, 4, 2, 16, 96, tiny_models.VOCAB
    t = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,), "lm_head.weight": (V, H)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                  p + "self_attn.q_proj.weight": (Hq * 2 * D, H), p + "self_attn.k_proj.weight": (Hkv * D, H),
                  p + "self_attn.v_proj.weight": (Hkv * D, H), p + "self_attn.o_proj.weight": (H, Hq * D),
                  p + "self_attn.q_norm.weight": (D,), p + "self_attn.k_norm.weight": (D,),
                  p + "mlp.gate_proj.weight": (I, H), p + "mlp.up_proj.weight": (I, H), p + "mlp.down_proj.weight": (H, I)})
    arrays = {k: (1 + 0.3 * rng.standard_normal(s) if len(s) == 1 else 0.25 * rng.standard_normal(s)).astype(np.float32)
              for k, s in t.items()}
    root.mkdir(parents=True, exist_ok=True)
    save_file(arrays, str(root / "model.safetensors"))
    (root / "config.json").write_text(json.dumps(cfg))
    tiny_tokenizer.write_hf_files(tiny_tokenizer.train(tiny_models.VOCAB), root)
    return root, arrays


def test_gated_attention_output(tmp_path):
    folder, arrays = _gated_folder(tmp_path / "gated")
    m = load_model(folder)
    assert m.spec["attn_output_gate"] and m.spec["qk_norm"]
    assert m.weights["blk.0.attn_q"][2] == [4 * 2 * 16, 64]
    toks = _tokens(2)
    ref = backend.run_logits(backend.make_model(m.spec, m.weights, reference=True), toks, PROMPT)
    # The gate must matter: the same weights without gating give different logits.
    ungated = dict(m.spec, attn_output_gate=False)
    w2 = dict(m.weights)
    for i in range(m.spec["num_layers"]):
        q = arrays[f"model.layers.{i}.self_attn.q_proj.weight"].reshape(4, 2, 16, 64)[:, 0].reshape(64, 64)
        w2[f"blk.{i}.attn_q"] = (np.ascontiguousarray(q), 0, [64, 64])
    plain = backend.run_logits(backend.make_model(ungated, w2, reference=True), toks, PROMPT)
    assert np.abs(plain - ref).max() > 1e-2
    if backend.have_runtime():
        got = backend.run_logits(backend.make_model(m.spec, m.weights), toks, PROMPT)
        parity.assert_close(got, ref, "f32_reduce", "gated attention vs reference")


def test_tree_verify_matches_reference(built):
    """A branching draft tree after a prefix: per-node logits agree with the reference's tree forward."""
    if not backend.have_runtime():
        pytest.skip("needs _core.Transformer")
    m = load_model(built["F32"])
    toks = _tokens(3)
    # root -> a -> b, root -> c -> d, a -> e : parents [-1, 0, 1, 0, 3, 1]
    parents = [-1, 0, 1, 0, 3, 1]
    n = len(parents)
    mask = np.zeros((n, n), np.uint8)
    depths = np.zeros(n, np.int32)
    for i, p in enumerate(parents):
        mask[i, i] = 1
        if p >= 0:
            mask[i] |= mask[p]
            depths[i] = depths[p] + 1
    tree = np.asarray(_tokens(4)[:n], np.int32)
    outs = []
    for model in (backend.make_model(m.spec, m.weights), backend.make_model(m.spec, m.weights, reference=True)):
        model.reset()
        model.forward(np.asarray(toks[:PROMPT], np.int32), logits="none")
        model.commit(np.arange(PROMPT, dtype=np.int32))
        outs.append(np.asarray(model.forward(tree, mask=mask, depths=depths, logits="all")["logits"]))
    parity.assert_close(outs[0], outs[1], "f32_reduce", "tree verify vs reference")
