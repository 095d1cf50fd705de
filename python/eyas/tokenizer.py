"""Tokenizer over the `tokenizers` library: built from a GGUF vocabulary or an HF tokenizer.json."""

from __future__ import annotations

import json
from pathlib import Path

from gguf.constants import TokenType
from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as _HFTokenizer

_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen3.5: Qwen2's splits with combining marks (\p{M}) kept inside letter runs (llama.cpp's "qwen35").
_QWEN35 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
           r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# GGUF `tokenizer.ggml.pre` -> regex splits applied in order before byte-level BPE (as llama.cpp does).
PRE_TOKENIZERS = {
    "default": [_GPT2], "gpt2": [_GPT2], "gpt-2": [_GPT2], "mpt": [_GPT2], "olmo": [_GPT2],
    "smollm": [r"\p{N}", _GPT2], "starcoder": [r"\p{N}", _GPT2], "refact": [r"\p{N}", _GPT2],
    "llama3": [_LLAMA3], "llama-bpe": [_LLAMA3], "llama-v3": [_LLAMA3],
    "qwen2": [_QWEN2], "stablelm2": [_QWEN2], "qwen35": [_QWEN35],
}
# llama.cpp's token types (the gguf package's table).
NORMAL, CONTROL, USER_DEFINED = int(TokenType.NORMAL), int(TokenType.CONTROL), int(TokenType.USER_DEFINED)
# Control tokens that end a turn even when the file names a different EOS (llama.cpp does the same).
_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<|end|>")


def fail(msg: str) -> None:
    raise ValueError(f"[tokenizer] {msg}")


class Tokenizer:
    """Text <-> token ids, plus the special ids the generation loop needs."""

    def __init__(self, tk: _HFTokenizer, *, bos_id: int | None, eos_ids: list[int], add_bos: bool):
        self._tk = tk
        self.bos_id = bos_id
        self.eos_ids = list(dict.fromkeys(eos_ids))
        self.add_bos = add_bos
        for name, i in [("bos", bos_id), *(("eos", e) for e in self.eos_ids)]:
            if i is not None and not 0 <= i < self.vocab_size:
                fail(f"{name} token id {i} is outside the vocabulary of {self.vocab_size} tokens")

    @property
    def vocab_size(self) -> int:
        return self._tk.get_vocab_size(with_added_tokens=True)

    def id_to_token(self, i: int) -> str | None:
        return self._tk.id_to_token(i)

    def token_to_id(self, tok: str) -> int | None:
        return self._tk.token_to_id(tok)

    def encode(self, text: str, *, add_bos: bool | None = None) -> list[int]:
        """Token ids of `text`; special tokens written in the text (e.g. <|im_start|>) are parsed."""
        if not isinstance(text, str):
            fail(f"encode expects a str, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # lone surrogates: a str that is not Unicode text
            fail(f"the text is not valid Unicode ({e.reason} at character {e.start})")
        ids = self._tk.encode(text, add_special_tokens=False).ids
        if (self.add_bos if add_bos is None else add_bos) and self.bos_id is not None:
            ids = [self.bos_id, *ids]
        return ids

    def decode(self, ids, *, skip_special: bool = True) -> str:
        return self._tk.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    # ---- constructors -------------------------------------------------------------------------

    @classmethod
    def from_gguf(cls, meta: dict, tokens: list[str], token_types, merges: list[str] | None) -> "Tokenizer":
        kind = meta.get("tokenizer.ggml.model")
        if kind != "gpt2":
            fail(f"GGUF tokenizer model {kind!r} is not supported (supported: 'gpt2' byte-level BPE)")
        pre = meta.get("tokenizer.ggml.pre", "default")
        if pre not in PRE_TOKENIZERS:
            fail(f"GGUF pre-tokenizer {pre!r} is not supported (supported: {', '.join(sorted(PRE_TOKENIZERS))})")
        if merges is None:
            fail("GGUF file has no tokenizer.ggml.merges")
        vocab = {}
        for i, t in enumerate(tokens):
            vocab.setdefault(t, i)
        pairs = []
        for m in merges:
            if not isinstance(m, str):
                fail(f"tokenizer.ggml.merges must be strings, got {type(m).__name__}")
            a, sep, b = m.partition(" ")
            if not sep:
                fail(f"malformed merge {m!r}")
            pairs.append((a, b))
        try:
            tk = _HFTokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, ignore_merges=False))
        except Exception as e:  # the Rust side raises its own exception type (e.g. a merge of unknown tokens)
            fail(f"GGUF vocabulary and merges do not make a BPE tokenizer ({e})")
        splits = [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in PRE_TOKENIZERS[pre]]
        tk.pre_tokenizer = pre_tokenizers.Sequence(
            [*splits, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tk.decoder = decoders.ByteLevel()
        types = list(token_types) if token_types is not None else [NORMAL] * len(tokens)
        if len(types) != len(tokens):
            fail(f"tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} tokens")
        added = [AddedToken(tokens[i], special=(ty == CONTROL), normalized=False)
                 for i, ty in enumerate(types) if ty in (CONTROL, USER_DEFINED)]
        if added:
            tk.add_tokens(added)
        bos = meta.get("tokenizer.ggml.bos_token_id")
        eos = [meta[k] for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id") if k in meta]
        eos += [i for i, t in enumerate(tokens) if t in _END_OF_TURN and types[i] == CONTROL]
        return cls(tk, bos_id=None if bos is None else int(bos), eos_ids=[int(e) for e in eos],
                   add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", False)))

    @classmethod
    def from_hf_folder(cls, folder: str | Path, config: dict | None = None) -> "Tokenizer":
        folder = Path(folder)
        path = folder / "tokenizer.json"
        if not path.is_file():
            fail(f"{folder}: no tokenizer.json")
        try:
            tk = _HFTokenizer.from_file(str(path))
        except Exception as e:  # the Rust side raises its own exception type
            fail(f"{path.name}: cannot be parsed ({e})")
        tcfg = _read(folder / "tokenizer_config.json")
        gcfg = _read(folder / "generation_config.json")
        config = config or {}

        def token_id(entry):
            if isinstance(entry, dict):
                entry = entry.get("content")
            return tk.token_to_id(entry) if isinstance(entry, str) else None

        bos = token_id(tcfg.get("bos_token"))
        if bos is None:
            bos = config.get("bos_token_id")
        eos: list = []
        for src in (gcfg.get("eos_token_id"), config.get("eos_token_id"), token_id(tcfg.get("eos_token"))):
            eos += src if isinstance(src, list) else ([src] if src is not None else [])
        return cls(tk, bos_id=bos, eos_ids=[int(e) for e in eos], add_bos=bool(tcfg.get("add_bos_token", False)))


def _read(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        fail(f"{path.name} is not valid JSON ({e})")
    if not isinstance(value, dict):
        fail(f"{path.name} must be a JSON object, got {type(value).__name__}")
    return value


class IncrementalDecoder:
    """Turns a growing list of ids into text pieces; holds back incomplete UTF-8 sequences.

    Decodes a short window (the previous piece's ids plus the new ones) so the cost per token
    stays constant and tokenizers that drop a leading space still get their context.
    """

    def __init__(self, tokenizer: Tokenizer):
        self._tok = tokenizer
        self._ids: list[int] = []
        self._prefix = 0  # window start
        self._read = 0  # ids before this index are emitted

    def push(self, ids) -> str:
        self._ids.extend(int(i) for i in ids)
        before = self._tok.decode(self._ids[self._prefix : self._read])
        text = self._tok.decode(self._ids[self._prefix :])
        if len(text) <= len(before) or text.endswith("\ufffd"):
            return ""  # nothing new yet, or a multi-byte character is still incomplete
        self._prefix, self._read = self._read, len(self._ids)
        return text[len(before) :]
