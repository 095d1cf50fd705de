"""Qwen3.5 GGUF files written with gguf-py the way llama.cpp's converter writes them (1 + w norms,
ssm_a = -exp(A_log), the conv [C, K] in F32, value heads tiled, post_attention_norm, MTP blocks counted in
block_count), loaded and compared with the HF folder of the same weights and with transformers; and
the qwen35 pre-tokenizer."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from eyas import _core  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from tests.fixtures import backend, tiny_qwen35  # noqa: E402

ATOL, RTOL = 2e-4, 1e-4  # as tests/test_qwen35_hf.py: token-sequential vs transformers' chunked prefill


@pytest.fixture(scope="module", params=list(tiny_qwen35.VARIANTS))
def built(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("q35gguf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tiny_qwen35.make_hf(request.param, root / "hf")
    return {"variant": request.param, "model": model, "hf": root / "hf",
            "F32": tiny_qwen35.write_gguf(root / "f32.gguf", model),
            "Q8_0": tiny_qwen35.write_gguf(root / "q8.gguf", model, "Q8_0")}


def _tokens(n, seed=0):
    return np.random.default_rng(seed).integers(0, tiny_qwen35.VOCAB, n)


def test_gguf_spec_matches_the_hf_spec(built):
    g, h = load_model(built["F32"]), load_model(built["hf"])
    # qwen35*: the converter tiles the value heads; qwen3next keeps HF's grouped order.
    assert g.spec["gdn"].pop("tiled_heads") == (built["variant"] != "next") and "tiled_heads" not in h.spec["gdn"]
    # llama.cpp's l2-norm epsilon is rms_norm_eps, stored as float32: equal once in float32.
    assert np.float32(g.spec["gdn"].pop("l2_eps")) == np.float32(h.spec["gdn"].pop("l2_eps"))
    for key in ("layers", "gdn", "moe", "num_layers", "rot_dim", "head_dim", "attn_output_gate", "qk_norm",
                "tie_embeddings", "vocab_size"):
        assert g.spec[key] == h.spec[key], key
    assert np.array_equal(g.spec["rope_inv_freq"], h.spec["rope_inv_freq"])
    assert g.spec["arch"] == h.spec["arch"] == {"moe": "qwen35moe", "next": "qwen3next"}.get(built["variant"], "qwen35")


@pytest.mark.parametrize("prompt", [2, 70])
def test_gguf_matches_the_hf_folder_and_transformers(built, prompt):
    toks = _tokens(prompt + 5, seed=prompt)
    g, h = load_model(built["F32"]), load_model(built["hf"])
    got = backend.run_logits(backend.make_model(g.spec, g.weights, max_context=96), toks, prompt)
    hf = backend.run_logits(backend.make_model(h.spec, h.weights, max_context=96), toks, prompt)
    # Same weights; the tiled value-head order only reorders the output projection's sum (observed
    # <= 2e-5 after 75 tokens of a MoE model).
    np.testing.assert_allclose(got, hf, rtol=1e-4, atol=5e-5)
    want = tiny_qwen35.hf_logits(built["model"], toks)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    assert np.array_equal(got.argmax(1), want.argmax(1))


def test_quantized_gguf_keeps_its_types(built):
    """Q8_0 matrices stay quantized (the matmuls take them as they are); the conv and the routers are F32
    as the converter keeps them. (This tiny random model is too sensitive for a tolerance against F32: the
    weight rounding alone moves its logits by ~10%.)"""
    q = load_model(built["Q8_0"])
    assert q.weights["blk.0.attn_qkv"][1] == 8 and q.weights["blk.1.attn_q"][1] == 8  # GGML Q8_0
    g = q.spec["gdn"]
    C = 2 * g["num_k_heads"] * g["k_head_dim"] + g["num_v_heads"] * g["v_head_dim"]
    assert q.weights["blk.0.ssm_conv1d"][1] == 0 and q.weights["blk.0.ssm_conv1d"][2] == [C, g["conv_kernel"]]
    out = backend.run_logits(backend.make_model(q.spec, q.weights), _tokens(12, seed=3), 8)
    assert np.isfinite(out).all()


def test_mtp_blocks_are_not_trunk_layers(built, tmp_path):
    """A converter export with MTP appends blocks and sets nextn_predict_layers; the trunk is the rest."""
    import gguf

    src = gguf.GGUFReader(str(built["F32"]))
    arch = str(bytes(src.fields["general.architecture"].parts[-1]), "utf-8")
    L = 4
    out = gguf.GGUFWriter(str(tmp_path / "mtp.gguf"), arch)
    for name, field in src.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name == f"{arch}.block_count":
            out.add_uint32(name, L + 1)
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            out.add_key_value(name, field.contents(), vtype, sub_type=field.types[-1])
        else:
            out.add_key_value(name, field.contents(), vtype)
    out.add_uint32(f"{arch}.nextn_predict_layers", 1)
    for t in src.tensors:
        out.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
        if t.name.startswith("blk.1."):  # an extra block made of block 1's tensors
            out.add_tensor(t.name.replace("blk.1.", f"blk.{L}.", 1), np.asarray(t.data), raw_dtype=t.tensor_type)
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    m = load_model(tmp_path / "mtp.gguf")
    assert m.spec["num_layers"] == L and len(m.spec["layers"]) == L
    assert not any(n.startswith(f"blk.{L}.") for n in m.weights)
    _core.Transformer(m.spec, m.weights, max_context=8)


def test_qwen35_pre_tokenizer_keeps_combining_marks_in_words():
    from tokenizers import Regex, pre_tokenizers

    from eyas.tokenizer import PRE_TOKENIZERS

    def split(pre, text):
        p = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r), behavior="isolated") for r in PRE_TOKENIZERS[pre]])
        return [s for s, _ in p.pre_tokenize_str(text)]

    text = "cafe\u0301 na\u0308ive it's 42!"
    assert split("qwen35", text) == ["cafe\u0301", " na\u0308ive", " it", "'s", " ", "4", "2", "!"]
    assert split("qwen2", text)[:3] == ["cafe", "\u0301", " na"]


def test_recurrent_layers_key_overrides_the_interval():
    from eyas.models import qwen35

    meta = {"qwen35.attention.recurrent_layers": [True, False, True, True, False], "qwen35.full_attention_interval": 2}
    assert qwen35._gguf_mixers(meta, "qwen35.", 4) == ["gdn", "attention", "gdn", "gdn"]
    assert qwen35._gguf_mixers({}, "qwen35.", 4) == ["gdn", "gdn", "gdn", "attention"]  # llama.cpp's default 4
    with pytest.raises(ValueError, match=r"recurrent_layers lists 2 layers, the model has 4"):
        qwen35._gguf_mixers({"qwen35.attention.recurrent_layers": [True, False]}, "qwen35.", 4)
