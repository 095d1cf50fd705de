"""GGUF and HF folder loading: zero-copy views, logical shapes, and every malformed-input path."""

from __future__ import annotations

import json
import mmap
import shutil

import numpy as np
import pytest
from gguf import GGMLQuantizationType

from eyas.loaders import load_model
from eyas.loaders.safetensors_mmap import read_safetensors
from tests.fixtures import tiny_models

CONFIG = dict(tiny_models.BASE, head_dim=16, rope_parameters={"rope_theta": 10000.0})


def _tensors(seed=0, variant="llama"):
    """GGUF-named float32 tensors of a tiny llama, without torch."""
    rng = np.random.default_rng(seed)
    V, H, I, L = tiny_models.VOCAB, 64, 96, CONFIG["num_hidden_layers"]
    t = {"token_embd.weight": (V, H), "output_norm.weight": (H,), "output.weight": (V, H)}
    for i in range(L):
        for name, shape in (("attn_norm", (H,)), ("ffn_norm", (H,)), ("attn_q", (64, H)), ("attn_k", (32, H)),
                            ("attn_v", (32, H)), ("attn_output", (H, 64)), ("ffn_gate", (I, H)), ("ffn_up", (I, H)),
                            ("ffn_down", (H, I))):
            t[f"blk.{i}.{name}.weight"] = shape
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in t.items()}


def _gguf(tmp_path, tensors=None, qtype="F32", name="m.gguf", variant="llama", **kw):
    return tiny_models.write_gguf(tmp_path / name, variant, tensors or _tensors(), CONFIG, qtype, **kw)


def _mapping_of(arr: np.ndarray):
    """The object whose memory an array views (through views and numpy's buffer wrapper)."""
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def test_gguf_weights_are_zero_copy_views_with_logical_shapes(tmp_path):
    m = load_model(_gguf(tmp_path, qtype="Q8_0"))
    arr, dt, shape = m.weights["blk.0.ffn_down"]
    assert dt == int(GGMLQuantizationType.Q8_0) and shape == [64, 96]  # [rows=out, cols=in]
    assert arr.dtype == np.uint8 and arr.nbytes == 64 * (96 // 32) * 34
    assert not arr.flags.writeable and not arr.flags.owndata  # a view into the read-only memory map
    assert isinstance(_mapping_of(arr), mmap.mmap)
    norm = m.weights["blk.0.attn_norm"]
    assert norm[1] == 0 and norm[0].dtype == np.float32 and norm[2] == [64]


def test_gguf_model_keeps_the_map_not_the_parsed_header(tmp_path, monkeypatch):
    # The header's vocabulary and merges are Python strings (tens of MB at a 248K vocabulary); once the
    # tokenizer is built only the memory map has to live as long as the weights' views.
    import gc
    import weakref

    from eyas.loaders import gguf as g

    headers = []
    real_open = g.open_file

    def spying_open(path):
        f = real_open(path)
        headers.append(weakref.ref(f))
        return f

    monkeypatch.setattr(g, "open_file", spying_open)
    m = load_model(_gguf(tmp_path))
    gc.collect()
    assert isinstance(_mapping_of(m.owner), mmap.mmap)
    assert len(headers) == 1 and headers[0]() is None, "the parsed GGUF header outlives the load"
    assert m.tokenizer.decode(m.tokenizer.encode("hello")) == "hello"  # the tokenizer stands on its own


def test_gguf_f32_values_round_trip(tmp_path):
    src = _tensors(3)
    m = load_model(_gguf(tmp_path, src))
    for name in ("blk.1.attn_k", "output", "blk.0.ffn_down"):
        arr, dt, shape = m.weights[name]
        assert dt == 0 and list(arr.shape) == shape
        assert np.array_equal(arr, src[name + ".weight"])
    assert m.spec["tie_embeddings"] is False and m.spec["rope_style"] == "interleaved"


def test_gguf_tied_embeddings_when_output_absent(tmp_path):
    src = _tensors()
    del src["output.weight"]
    m = load_model(_gguf(tmp_path, src))
    assert m.spec["tie_embeddings"] and "output" not in m.weights


def test_gguf_truncated_file(tmp_path):
    path = _gguf(tmp_path)
    data = path.read_bytes()
    for cut in (len(data) - 100, len(data) // 2, 40):
        bad = tmp_path / f"cut{cut}.gguf"
        bad.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=r"^\[gguf\] .*(truncated|valid GGUF)"):
            load_model(bad)


def test_gguf_not_a_gguf(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"NOPE" + bytes(200))
    with pytest.raises(ValueError, match=r"\[gguf\] x.gguf: not a valid GGUF"):
        load_model(bad)
    with pytest.raises(ValueError, match="no such file"):
        load_model(tmp_path / "missing.gguf")


def test_gguf_missing_tensor_is_named(tmp_path):
    src = _tensors()
    del src["blk.1.ffn_up.weight"]
    with pytest.raises(ValueError, match=r"\[weights\] .*'blk.1.ffn_up' is missing"):
        load_model(_gguf(tmp_path, src))


def test_gguf_wrong_shape_is_named(tmp_path):
    src = _tensors()
    src["blk.0.attn_v.weight"] = np.zeros((48, 64), np.float32)
    with pytest.raises(ValueError, match=r"'blk.0.attn_v' has shape \[48, 64\], expected \[32, 64\]"):
        load_model(_gguf(tmp_path, src))


def test_gguf_config_tensor_mismatch(tmp_path):
    src = _tensors()
    src["blk.0.ffn_gate.weight"] = np.zeros((128, 64), np.float32)  # metadata says 96
    with pytest.raises(ValueError, match=r"'blk.0.ffn_gate' has shape \[128, 64\], expected \[96, 64\]"):
        load_model(_gguf(tmp_path, src))


def test_gguf_unexpected_tensor(tmp_path):
    src = _tensors()
    src["blk.0.mystery.weight"] = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match="mystery"):
        load_model(_gguf(tmp_path, src))


def test_gguf_unsupported_quant_type_is_named(tmp_path):
    import gguf

    src = _tensors()
    path = tmp_path / "q2k.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for k, v in {"llama.embedding_length": 64, "llama.block_count": 3, "llama.attention.head_count": 4}.items():
        w.add_uint32(k, v)
    for name, t in src.items():
        if name == "blk.0.ffn_up.weight":  # a Q2_K tensor: 96 rows of 256 elements (84 bytes per block)
            w.add_tensor("blk.0.ffn_up.weight", np.zeros((96, 84), np.uint8), raw_dtype=GGMLQuantizationType.Q2_K)
        else:
            w.add_tensor(name, t)
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    with pytest.raises(ValueError, match=r"'blk.0.ffn_up' has unsupported type Q2_K"):
        load_model(path)


def test_gguf_unsupported_architecture(tmp_path):
    with pytest.raises(ValueError, match=r"\[model\] unsupported GGUF architecture 'gemma'"):
        load_model(_gguf(tmp_path, variant="gemma"))


def test_gguf_unsupported_rope_scaling(tmp_path):
    with pytest.raises(ValueError, match="rope scaling type 'yarn'"):
        load_model(_gguf(tmp_path, extra_kv={"llama.rope.scaling.type": "yarn"}))


def test_gguf_without_tokenizer(tmp_path):
    with pytest.raises(ValueError, match="tokenizer"):
        load_model(_gguf(tmp_path, tokenizer=False))


# ---- Hugging Face folders -------------------------------------------------------------------


def _hf_folder(tmp_path, dtype="F32", config=None, drop=(), extra=None):
    from safetensors.numpy import save_file

    from tests.fixtures import tiny_tokenizer

    src = _tensors(5)
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    layer = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    out = {}
    for k, v in src.items():
        if k in names:
            out[names[k]] = v
        else:
            _, i, n, _ = k.split(".")
            out[f"model.layers.{i}.{layer[n]}.weight"] = v
    for k in drop:
        del out[k]
    out.update(extra or {})
    folder = tmp_path / "hf"
    folder.mkdir(exist_ok=True)
    if dtype == "BF16":  # numpy has no bfloat16: write the raw file by hand
        _write_bf16(folder / "model.safetensors", out)
    else:
        save_file({k: v.astype(np.float16 if dtype == "F16" else np.float32) for k, v in out.items()},
                  str(folder / "model.safetensors"))
    cfg = dict(CONFIG, model_type="llama", hidden_act="silu", tie_word_embeddings=False)
    cfg.update(config or {})
    (folder / "config.json").write_text(json.dumps(cfg))
    tiny_tokenizer.write_hf_files(tiny_tokenizer.train(tiny_models.VOCAB), folder)
    return folder, out


def _bf16_bits(a: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _write_bf16(path, tensors):
    header, blobs, off = {}, [], 0
    for k, v in tensors.items():
        b = _bf16_bits(v).tobytes()
        header[k] = {"dtype": "BF16", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def test_hf_f32_zero_copy_and_values(tmp_path):
    folder, src = _hf_folder(tmp_path)
    m = load_model(folder)
    arr, dt, shape = m.weights["blk.2.attn_output"]
    assert dt == 0 and shape == [64, 64] and not arr.flags.owndata
    assert np.array_equal(arr, src["model.layers.2.self_attn.o_proj.weight"])
    assert m.spec["rope_style"] == "neox" and m.format == "hf"


def test_hf_bf16_is_handed_over_raw(tmp_path):
    folder, src = _hf_folder(tmp_path, dtype="BF16")
    m = load_model(folder)
    arr, dt, shape = m.weights["blk.0.ffn_up"]
    assert dt == 30 and shape == [96, 64] and arr.dtype == np.uint8 and not arr.flags.owndata
    assert np.array_equal(arr.reshape(-1).view(np.uint16), _bf16_bits(src["model.layers.0.mlp.up_proj.weight"]).reshape(-1))
    norm = m.weights["blk.0.attn_norm"]  # vectors become float32
    assert norm[1] == 0 and norm[0].dtype == np.float32
    want = (_bf16_bits(src["model.layers.0.input_layernorm.weight"]).astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(norm[0], want)


def test_hf_f16_dtype(tmp_path):
    m = load_model(_hf_folder(tmp_path, dtype="F16")[0])
    assert m.weights["token_embd"][1] == 1 and m.weights["token_embd"][0].dtype == np.uint8


def test_hf_missing_tensor(tmp_path):
    folder, _ = _hf_folder(tmp_path, drop=["model.layers.1.mlp.down_proj.weight"])
    with pytest.raises(ValueError, match="'blk.1.ffn_down' is missing"):
        load_model(folder)


def test_hf_config_mismatch(tmp_path):
    folder, _ = _hf_folder(tmp_path, config={"intermediate_size": 128})
    with pytest.raises(ValueError, match=r"'blk.0.ffn_(gate|down)' has shape \[(96, 64|64, 96)\], expected"):
        load_model(folder)


def test_hf_unknown_tensor_and_model_type(tmp_path):
    folder, _ = _hf_folder(tmp_path, extra={"model.layers.0.self_attn.rel_bias": np.zeros(4, np.float32)})
    with pytest.raises(ValueError, match="rel_bias"):
        load_model(folder)
    folder, _ = _hf_folder(tmp_path, config={"model_type": "gpt_neox"})
    with pytest.raises(ValueError, match=r"unsupported model_type 'gpt_neox'"):
        load_model(folder)
    folder, _ = _hf_folder(tmp_path, config={"hidden_act": "gelu"})
    with pytest.raises(ValueError, match="hidden_act 'gelu'"):
        load_model(folder)


def test_hf_truncated_safetensors(tmp_path):
    folder, _ = _hf_folder(tmp_path)
    f = folder / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[:-10])
    with pytest.raises(ValueError, match=r"\[safetensors\] .*runs past the end"):
        load_model(folder)
    f.write_bytes(data[:5])
    with pytest.raises(ValueError, match="too short"):
        read_safetensors(f)
    f.write_bytes((10**9).to_bytes(8, "little") + data[8:100])
    with pytest.raises(ValueError, match="header"):
        read_safetensors(f)


def test_hf_folder_without_files(tmp_path):
    folder, _ = _hf_folder(tmp_path)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        broken = tmp_path / f"no_{name}"
        shutil.copytree(folder, broken)
        (broken / name).unlink()
        with pytest.raises(ValueError, match=name.replace(".", r"\.").replace("model\\.safetensors", r"\*\.safetensors")):
            load_model(broken)


def test_hf_chat_template_and_eos(tmp_path):
    m = load_model(_hf_folder(tmp_path)[0])
    assert m.chat_template is not None
    assert m.tokenizer.token_to_id("<|im_end|>") in m.tokenizer.eos_ids
    assert m.chat_template.render("hi").endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q4_1"])
def test_gguf_parser_agrees_with_gguf_reader(tmp_path, qtype):
    """Our header parser reads the same metadata and tensor bytes as the `gguf` package's GGUFReader."""
    from gguf import GGUFReader

    from eyas.loaders.gguf_file import GGUFFile

    path = _gguf(tmp_path, qtype=qtype, extra_kv={"general.name": "tiny"})
    ours, theirs = GGUFFile(path), GGUFReader(path)
    header = {k for k in theirs.fields if k.startswith("GGUF.")}  # GGUFReader's pseudo-fields
    assert set(ours.fields) == set(theirs.fields) - header
    for key, field in theirs.fields.items():
        if key in header:
            continue
        want, got = field.contents(), ours.fields[key]
        got = got.tolist() if isinstance(got, np.ndarray) else got
        assert got == (pytest.approx(want) if isinstance(want, float) else want), key
    m = load_model(path)
    for t in theirs.tensors:
        name = t.name.removesuffix(".weight")
        assert np.array_equal(np.asarray(m.weights[name][0]).reshape(-1).view(np.uint8),
                              np.asarray(t.data).reshape(-1).view(np.uint8)), name
        assert m.weights[name][1] == int(t.tensor_type)
