"""Hostile GGUF files: each lies in one field (sizes, offsets, counts, types, metadata, tokenizer)
and must be refused with a ValueError that names the problem, without a big allocation; a valid
file still loads after all of them (the process stays healthy)."""

from __future__ import annotations

import math
import struct

import pytest

from eyas.loaders import load_model
from tests.fixtures import tiny_models
from tests.hostile import gguf_bytes as gb
from tests.hostile.checks import rejects

HUGE = 2**63 - 1


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    return tiny_models.random_llama_gguf(tmp_path_factory.mktemp("hostile_gguf") / "valid.gguf")


@pytest.fixture(scope="module")
def image(valid):
    return gb.GGUFImage.read(valid)


def set_field(key, typed_value):
    def edit(img):
        img.fields[key] = typed_value
    return edit


def drop_field(key):
    def edit(img):
        del img.fields[key]
    return edit


def set_tensor(name, **changes):
    def edit(img):
        t = img.tensor(name)
        for k, v in changes.items():
            setattr(t, k, v)
    return edit


def _more_tokens(img):
    """100 extra tokens: a tokenizer that builds, but is larger than the model's embedding."""
    tokens, types = img.fields["tokenizer.ggml.tokens"][1][1], img.fields["tokenizer.ggml.token_type"][1][1]
    img.fields["tokenizer.ggml.tokens"] = (gb.ARRAY, (gb.STRING, tokens + [f"extra{i}" for i in range(100)]))
    img.fields["tokenizer.ggml.token_type"] = (gb.ARRAY, (gb.I32, types + [1] * 100))


def _duplicate_tensor(img):
    img.tensors.append(gb.Tensor(**vars(img.tensors[0])))


# (id, edit of a parsed valid image, message pattern). Each edit changes exactly one thing.
EDITS = [
    ("unknown_value_type", set_field("hostile.key", (99, 0)), r"unknown metadata value type 99"),
    ("array_of_unknown_type", set_field("hostile.key", (gb.ARRAY, (77, [0]))), r"unknown metadata value type 77"),
    ("tensor_5_dims", set_tensor("output_norm.weight", dims=[64, 1, 1, 1, 1]), r"5 dimensions"),
    ("tensor_dims_overflow", set_tensor("output_norm.weight", dims=[2**62, 2**62]), r"output_norm.*(past the end|shape)"),
    ("tensor_offset_past_eof", set_tensor("output_norm.weight", offset=2**40), r"output_norm.*past the end"),
    ("tensor_offset_max_u64", set_tensor("output_norm.weight", offset=2**64 - 1), r"output_norm.*past the end"),
    ("tensor_unknown_type", set_tensor("blk.0.attn_q.weight", type=99), r"unsupported type type 99"),
    ("tensor_unsupported_quant", set_tensor("blk.0.attn_q.weight", type=10), r"unsupported type Q2_K"),
    ("tensor_row_not_block_multiple", set_tensor("blk.0.attn_q.weight", type=8, dims=[63, 64]),
     r"not a multiple of the Q8_0 block size"),
    ("tensor_shape_lies", set_tensor("blk.1.ffn_up.weight", dims=[64, 95]), r"ffn_up.*shape \[95, 64\], expected"),
    ("duplicate_tensor", _duplicate_tensor, r"(duplicate|more than once|unexpected)"),
    ("block_count_huge", set_field("llama.block_count", (gb.U32, 2**32 - 1)), r"block_count|num_layers"),
    ("block_count_zero", set_field("llama.block_count", (gb.U32, 0)), r"num_layers must be a positive"),
    ("head_count_zero", set_field("llama.attention.head_count", (gb.U32, 0)), r"head"),
    ("head_count_kv_not_divisor", set_field("llama.attention.head_count_kv", (gb.U32, 3)), r"not a multiple"),
    ("embedding_length_lies", set_field("llama.embedding_length", (gb.U32, 128)), r"shape .*expected"),
    ("embedding_length_string", set_field("llama.embedding_length", (gb.STRING, "64")), r"embedding_length"),
    ("embedding_length_array", set_field("llama.embedding_length", (gb.ARRAY, (gb.U32, [64, 64]))),
     r"per-layer values"),
    ("key_length_negative", set_field("llama.attention.key_length", (gb.I32, -16)), r"head_dim must be a positive"),
    ("rope_dims_odd", set_field("llama.rope.dimension_count", (gb.U32, 15)), r"rotary dimension"),
    ("rope_base_nan", set_field("llama.rope.freq_base", (gb.F32, math.nan)), r"freq_base"),
    ("rope_base_negative", set_field("llama.rope.freq_base", (gb.F32, -1.0)), r"freq_base"),
    ("rope_base_string", set_field("llama.rope.freq_base", (gb.STRING, "fast")), r"freq_base"),
    ("rms_eps_nan", set_field("llama.attention.layer_norm_rms_epsilon", (gb.F32, math.nan)), r"epsilon"),
    ("rms_eps_negative", set_field("llama.attention.layer_norm_rms_epsilon", (gb.F32, -1e-5)), r"epsilon"),
    ("rope_scaling_unknown", set_field("llama.rope.scaling.type", (gb.STRING, "yarn-ish")), r"rope scaling type"),
    ("architecture_missing", drop_field("general.architecture"), r"architecture"),
    ("architecture_unknown", set_field("general.architecture", (gb.STRING, "gpt-9")), r"gpt-9"),
    ("architecture_not_string", set_field("general.architecture", (gb.U32, 7)), r"architecture"),
    ("alignment_zero", set_field("general.alignment", (gb.U32, 0)), r"alignment"),
    ("alignment_not_power_of_two", set_field("general.alignment", (gb.U32, 33)), r"alignment"),
    ("alignment_string", set_field("general.alignment", (gb.STRING, "32")), r"alignment"),
    ("tokens_missing", drop_field("tokenizer.ggml.tokens"), r"tokenizer.ggml.tokens"),
    ("tokens_not_strings", set_field("tokenizer.ggml.tokens", (gb.ARRAY, (gb.U32, list(range(300))))),
     r"tokenizer.ggml.tokens"),
    ("token_types_short", set_field("tokenizer.ggml.token_type", (gb.ARRAY, (gb.I32, [1, 1, 3]))), r"token_type"),
    ("merges_malformed", set_field("tokenizer.ggml.merges", (gb.ARRAY, (gb.STRING, ["nospace"]))), r"malformed merge"),
    ("merges_not_strings", set_field("tokenizer.ggml.merges", (gb.ARRAY, (gb.U32, [1, 2]))), r"merges"),
    ("merges_missing", drop_field("tokenizer.ggml.merges"), r"merges"),
    ("tokenizer_model_unknown", set_field("tokenizer.ggml.model", (gb.STRING, "sentencepiece9")), r"not supported"),
    ("pre_tokenizer_unknown", set_field("tokenizer.ggml.pre", (gb.STRING, "evil")), r"pre-tokenizer 'evil'"),
    ("vocab_larger_than_model", _more_tokens, r"vocabulary \(400 tokens\) is larger than the model's \(300"),
    ("merges_name_unknown_tokens", set_field("tokenizer.ggml.merges", (gb.ARRAY, (gb.STRING, ["zz qq"]))),
     r"do not make a BPE tokenizer"),
    ("tokens_nested_arrays", set_field("tokenizer.ggml.tokens", (gb.ARRAY, (gb.ARRAY, [(gb.U8, [1])] * 3))),
     r"tokenizer.ggml.tokens"),
    ("eos_id_out_of_range", set_field("tokenizer.ggml.eos_token_id", (gb.U32, 10**6)), r"eos"),
    ("bos_id_out_of_range", set_field("tokenizer.ggml.bos_token_id", (gb.U32, 2**32 - 1)), r"bos"),
    ("chat_template_does_not_parse", set_field("tokenizer.chat_template", (gb.STRING, "{% for %}")), r"does not parse"),
]


@pytest.mark.parametrize("edit, match", [pytest.param(e, m, id=i) for i, e, m in EDITS])
def test_lying_field_is_refused(tmp_path, image, edit, match):
    img = image.copy()
    edit(img)
    path = img.write(tmp_path / "hostile.gguf")
    rejects(lambda: load_model(path), match)


def _header_len(img) -> int:
    return len(img.header())


# (id, bytes of a hostile file built from the valid image, message pattern): framing and truncation.
def _framing_cases(img):
    whole = img.to_bytes()
    head = _header_len(img)
    magic_version = whole[:8]
    return [
        ("empty_file", b"", r"not a valid GGUF"),
        ("three_bytes", b"GGU", r"not a valid GGUF"),
        ("bad_magic", b"GGML" + whole[4:], r"bad magic"),
        ("version_1", b"GGUF" + struct.pack("<I", 1) + whole[8:], r"version 1"),
        ("version_huge", b"GGUF" + struct.pack("<I", 2**32 - 1) + whole[8:], r"version"),
        ("cut_in_counts", whole[:12], r"truncated"),
        ("cut_in_first_key", whole[:30], r"truncated"),
        ("cut_in_metadata", whole[: head // 2], r"truncated"),
        ("cut_in_tensor_table", whole[: head - 5], r"truncated"),
        ("cut_in_tensor_data", whole[: len(whole) - 1000], r"past the end"),
        ("n_kv_lies", img.to_bytes(n_kv=HUGE), r"truncated|unknown metadata value type"),
        ("n_tensors_lies", img.to_bytes(n_tensors=HUGE), r"truncated"),
        ("key_length_lies", magic_version + struct.pack("<QQ", 0, 1) + struct.pack("<Q", HUGE) + b"abc", r"truncated"),
        ("string_value_length_lies", magic_version + struct.pack("<QQ", 0, 1) + gb.string("k")
         + struct.pack("<IQ", gb.STRING, 2**40), r"truncated"),
        ("u32_array_length_lies", magic_version + struct.pack("<QQ", 0, 1) + gb.string("k")
         + struct.pack("<IIQ", gb.ARRAY, gb.U32, 2**61), r"truncated"),
        ("string_array_length_lies", magic_version + struct.pack("<QQ", 0, 1) + gb.string("k")
         + struct.pack("<IIQ", gb.ARRAY, gb.STRING, 2**62) + gb.string("a"), r"truncated"),
        ("nested_array_length_lies", magic_version + struct.pack("<QQ", 0, 1) + gb.string("k")
         + struct.pack("<IIQ", gb.ARRAY, gb.ARRAY, 2**62) + struct.pack("<IQ", gb.U8, 0), r"truncated"),
        ("arrays_nested_deeply", magic_version + struct.pack("<QQ", 0, 1) + gb.string("k")
         + struct.pack("<IIQ", gb.ARRAY, gb.ARRAY, 1) + struct.pack("<IQ", gb.ARRAY, 1) * 20000
         + struct.pack("<IQ", gb.U8, 0), r"nest"),
    ]


FRAMING_IDS = [c[0] for c in _framing_cases(gb.GGUFImage({}, [], b""))]


@pytest.mark.parametrize("case", FRAMING_IDS)
def test_broken_framing_is_refused(tmp_path, image, case):
    _, data, match = next(c for c in _framing_cases(image) if c[0] == case)
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    rejects(lambda: load_model(path), match, op="gguf")


def test_invalid_utf8_in_strings_loads_with_replacement(tmp_path, image):
    """Invalid UTF-8 in a metadata string is not an error: it decodes with U+FFFD, as llama.cpp reads it."""
    img = image.copy()
    img.fields["general.name"] = (gb.STRING, b"bad \xff\xfe name")
    m = load_model(img.write(tmp_path / "utf8.gguf"))
    assert m.spec["vocab_size"] == tiny_models.VOCAB


def test_a_valid_file_still_loads_after_the_catalogue(valid):
    m = load_model(valid)
    assert m.spec["vocab_size"] == tiny_models.VOCAB and m.tokenizer.encode("hello")
