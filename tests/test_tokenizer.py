"""Tokenizers built from GGUF vocabularies: agreement with tokenizer.json, round trips, special tokens."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer as HFTokenizer

from eyas.tokenizer import IncrementalDecoder, Tokenizer
from tests.fixtures import tiny_tokenizer

TEXTS = [
    "Hello world! Hello there, how are you today?",
    "  leading spaces and\ttabs\nnew lines\n\n",
    "numbers 12345 and 67890; don't won't we'll",
    "café naïve 日本語 emoji 🙂 mixed",
    "",
]


def _gguf_tokenizer(pre="gpt2") -> Tokenizer:
    tokens, types, merges = tiny_tokenizer.gguf_fields(tiny_tokenizer.train())
    meta = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre,
            "tokenizer.ggml.eos_token_id": tokens.index("<|im_end|>")}
    return Tokenizer.from_gguf(meta, tokens, types, merges)


@pytest.mark.parametrize("text", TEXTS)
def test_gguf_built_matches_tokenizer_json(text):
    hf: HFTokenizer = tiny_tokenizer.train()
    ours = _gguf_tokenizer()
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids
    assert ours.decode(ours.encode(text)) == text


def test_special_tokens_are_parsed_and_skipped_on_decode():
    tok = _gguf_tokenizer()
    start, end = tok.token_to_id("<|im_start|>"), tok.token_to_id("<|im_end|>")
    ids = tok.encode("<|im_start|>user\nhi<|im_end|>")
    assert ids[0] == start and ids[-1] == end
    assert tok.decode(ids) == "user\nhi"
    assert tok.decode(ids, skip_special=False) == "<|im_start|>user\nhi<|im_end|>"
    assert end in tok.eos_ids


def test_unsupported_tokenizer_kinds():
    tokens, types, merges = tiny_tokenizer.gguf_fields(tiny_tokenizer.train())
    with pytest.raises(ValueError, match=r"\[tokenizer\] GGUF pre-tokenizer 'klingon'"):
        Tokenizer.from_gguf({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "klingon"}, tokens, types, merges)
    with pytest.raises(ValueError, match="tokenizer model 'llama'"):
        Tokenizer.from_gguf({"tokenizer.ggml.model": "llama"}, tokens, types, merges)
    with pytest.raises(ValueError, match="merges"):
        Tokenizer.from_gguf({"tokenizer.ggml.model": "gpt2"}, tokens, types, None)
    with pytest.raises(ValueError, match="expects a str"):
        _gguf_tokenizer().encode(b"bytes")


def test_incremental_decoder_reassembles_multibyte_text():
    tok = _gguf_tokenizer()
    text = "café 日本語 🙂 done"
    ids = tok.encode(text)
    dec = IncrementalDecoder(tok)
    pieces = [dec.push([i]) for i in ids]
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
    # Byte-level BPE splits the emoji over several tokens: some pushes must hold text back.
    assert sum(1 for p in pieces if p == "") > 0


# ---- the default model's tokenizer (SmolLM2: `smollm` pre-tokenizer) ------------------------


@pytest.fixture(scope="module")
def smollm():
    from tests.fixtures.default_model import load_or_skip

    return load_or_skip().tokenizer


def test_smollm_round_trip(smollm):
    for text in TEXTS + ["def f(x):\n    return x ** 2  # comment", "The year 2024 had 366 days."]:
        assert smollm.decode(smollm.encode(text)) == text


def test_smollm_known_ids(smollm):
    # Common words with a leading space are single vocabulary entries.
    for word in [" the", " capital", " France", " Paris", "Hello"]:
        ids = smollm.encode(word)
        assert len(ids) == 1 and smollm.id_to_token(ids[0]) == word.replace(" ", "\u0120")
    # `smollm` splits every digit on its own, as llama.cpp does for this pre-tokenizer.
    ids = smollm.encode("12345")
    assert [smollm.id_to_token(i) for i in ids] == list("12345")
    assert smollm.encode("<|im_start|>") == [1] and smollm.eos_ids[0] == 2
    assert smollm.add_bos is False


def test_smollm_chat_prompt_ids(smollm):
    ids = smollm.encode("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")
    assert ids.count(1) == 2 and ids.count(2) == 1
    assert np.all(np.asarray(ids) < smollm.vocab_size)
