"""Hostile .safetensors files and Hugging Face folders: lying header lengths, offsets, shapes and
dtypes, headers that are not objects, broken configs and tokenizer files. Each is refused with a
ValueError naming the problem, without a big allocation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from eyas.loaders import load_model
from eyas.loaders.safetensors_mmap import read_tensors
from tests.fixtures import tiny_models, tiny_tokenizer
from tests.hostile import safetensors_bytes as sb
from tests.hostile.checks import rejects

ONE = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
HEADER, DATA = sb.header_of(ONE)


def entry(**changes):
    """The header of ONE with tensor w's entry changed (a value of None drops the key)."""
    e = {**HEADER["w"], **changes}
    return {"w": {k: v for k, v in e.items() if v is not None}}


# (id, file bytes, message pattern)
FILES = [
    ("empty", b"", r"too short for a header"),
    ("seven_bytes", b"\x01" * 7, r"too short for a header"),
    ("header_length_huge", sb.to_bytes(HEADER, DATA, header_len=2**63), r"runs past the end"),
    ("header_length_zero", sb.to_bytes(b"", DATA), r"not valid JSON"),
    ("header_not_json", sb.to_bytes(b"{not json", DATA), r"not valid JSON"),
    ("header_invalid_utf8", sb.to_bytes(b'{"w\xff": 1}', DATA), r"not valid JSON"),
    ("header_deeply_nested", sb.to_bytes(b"[" * 100000 + b"]" * 100000, DATA), r"not valid JSON|nest"),
    ("header_a_list", sb.to_bytes([1, 2], DATA), r"header must be a JSON object"),
    ("header_a_number", sb.to_bytes(7, DATA), r"header must be a JSON object"),
    ("entry_not_object", sb.to_bytes({"w": [1, 2]}, DATA), r"tensor 'w'.*must be an object"),
    ("offsets_missing", sb.to_bytes(entry(data_offsets=None), DATA), r"tensor 'w'.*data_offsets"),
    ("offsets_one_number", sb.to_bytes(entry(data_offsets=[0]), DATA), r"tensor 'w'.*data_offsets"),
    ("offsets_reversed", sb.to_bytes(entry(data_offsets=[24, 0]), DATA), r"tensor 'w'.*data_offsets"),
    ("offsets_negative", sb.to_bytes(entry(data_offsets=[-24, 0]), DATA), r"tensor 'w'.*data_offsets"),
    ("offsets_floats", sb.to_bytes(entry(data_offsets=[0.0, 24.0]), DATA), r"tensor 'w'.*data_offsets"),
    ("offsets_past_eof", sb.to_bytes(entry(data_offsets=[2**40, 2**40 + 24]), DATA), r"past the end"),
    ("shape_negative", sb.to_bytes(entry(shape=[-2, -3]), DATA), r"tensor 'w'.*shape"),
    ("shape_a_string", sb.to_bytes(entry(shape="2x3"), DATA), r"tensor 'w'.*shape"),
    ("shape_overflows_int64", sb.to_bytes(entry(shape=[2**32, 2**32], data_offsets=[0, 0]), DATA),
     r"tensor 'w'.*(shape|bytes do not match)"),
    ("shape_lies_about_bytes", sb.to_bytes(entry(shape=[3, 3]), DATA), r"bytes do not match"),
    ("dtype_unknown", sb.to_bytes(entry(dtype="F8_E9M9"), DATA), r"unsupported dtype"),
    ("dtype_missing", sb.to_bytes(entry(dtype=None), DATA), r"unsupported dtype"),
    ("data_truncated", sb.to_bytes(HEADER, DATA[:-4]), r"past the end"),
]


@pytest.mark.parametrize("data, match", [pytest.param(d, m, id=i) for i, d, m in FILES])
def test_hostile_safetensors_file_is_refused(tmp_path, data, match):
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(data)
    rejects(lambda: read_tensors(path), match, op="safetensors")


def test_the_honest_file_reads(tmp_path):
    path = tmp_path / "ok.safetensors"
    path.write_bytes(sb.to_bytes(HEADER, DATA))
    assert np.array_equal(read_tensors(path)["w"].numpy(), ONE["w"])


_HF_LAYER = {gguf_name: hf for hf, gguf_name in tiny_models._LAYER_NAMES.items()}


def write_hf_folder(folder, config_changes=None):
    """A tiny llama as an HF folder (config.json, model.safetensors, tokenizer files), without torch."""
    gguf_named = tiny_models.random_llama_tensors()
    state = {"model.embed_tokens.weight": gguf_named.pop("token_embd.weight"),
             "model.norm.weight": gguf_named.pop("output_norm.weight"),
             "lm_head.weight": gguf_named.pop("output.weight")}
    for name, w in gguf_named.items():
        _, i, rest = name.split(".", 2)
        state[f"model.layers.{i}.{_HF_LAYER[rest]}"] = w
    folder.mkdir(parents=True, exist_ok=True)
    header, data = sb.header_of(state)
    (folder / "model.safetensors").write_bytes(sb.to_bytes(header, data))
    config = {**tiny_models.BASE, "model_type": "llama", "rope_theta": 10000.0, **(config_changes or {})}
    (folder / "config.json").write_text(json.dumps(config))
    tiny_tokenizer.write_hf_files(tiny_tokenizer.train(tiny_models.VOCAB), folder)
    return folder


def replace_file(name, text):
    def edit(folder):
        (folder / name).write_text(text)
    return edit


def config_change(**changes):
    def edit(folder):
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(changes)
        (folder / "config.json").write_text(json.dumps(cfg))
    return edit


FOLDERS = [
    ("config_not_json", replace_file("config.json", "{oops"), r"config.json is not valid JSON"),
    ("config_a_list", replace_file("config.json", "[1, 2]"), r"config.json must be a JSON object"),
    ("model_type_unknown", config_change(model_type="gpt-9"), r"gpt-9"),
    ("layers_huge", config_change(num_hidden_layers=2**40), r"num_hidden_layers = \d+ is over the limit"),
    ("hidden_size_string", config_change(hidden_size="64"), r"hidden_size must be an integer"),
    ("heads_zero", config_change(num_attention_heads=0), r"num_heads|num_attention_heads"),
    ("rms_eps_nan", replace_file("config.json", json.dumps({**tiny_models.BASE, "model_type": "llama"})
                                 .replace('"rms_norm_eps": 1e-06', '"rms_norm_eps": NaN')), r"rms_norm_eps"),
    ("rope_theta_negative", config_change(rope_theta=-5.0), r"rope_theta"),
    ("rope_theta_infinite", config_change(rope_theta=math.inf), r"rope_theta"),
    ("vocab_lies", config_change(vocab_size=1000), r"shape .*expected"),
    ("tokenizer_json_garbage", replace_file("tokenizer.json", "{\"model\": 5}"), r"tokenizer.json: cannot be parsed"),
    ("tokenizer_config_a_list", replace_file("tokenizer_config.json", "[]"), r"tokenizer_config.json must be a JSON object"),
    ("generation_config_a_list", replace_file("generation_config.json", "[3]"),
     r"generation_config.json must be a JSON object"),
    ("bos_id_out_of_range", config_change(bos_token_id=10**9), r"bos token id"),
    ("eos_id_out_of_range", config_change(eos_token_id=[2, 10**9]), r"eos token id"),
    ("safetensors_truncated", lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:-8]),
     r"past the end"),
]


@pytest.mark.parametrize("edit, match", [pytest.param(e, m, id=i) for i, e, m in FOLDERS])
def test_hostile_hf_folder_is_refused(tmp_path, edit, match):
    folder = write_hf_folder(tmp_path / "m")
    edit(folder)
    rejects(lambda: load_model(folder), match)


def test_the_honest_folder_loads(tmp_path):
    m = load_model(write_hf_folder(tmp_path / "m"))
    assert m.spec["num_layers"] == tiny_models.BASE["num_hidden_layers"] and m.tokenizer.encode("hello")
