"""Model files -> (spec, weights, tokenizer, chat template): GGUF files and Hugging Face folders."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from eyas.chat import ChatTemplate
from eyas.loaders import sampling as recommended
from eyas.tokenizer import Tokenizer


@dataclasses.dataclass
class LoadedModel:
    path: Path
    format: str  # "gguf" | "hf"
    spec: dict  # the runtime contract (docs/model_spec.md)
    weights: dict  # name -> (array, dtype_id, shape), zero-copy views into `owner`
    tokenizer: Tokenizer
    chat_template: ChatTemplate | None
    context_length: int  # trained context (0 = unknown)
    rope_theta: float  # rope base (the spec holds the inverse frequencies; drafter configs name the base)
    owner: Any  # keeps the memory maps alive
    # The authors' recommended sampling (temperature / top_p / top_k it names; empty: none given).
    sampling: dict = dataclasses.field(default_factory=dict)

    @property
    def num_layers(self) -> int:
        return self.spec["num_layers"]


def load_model(path: str | Path) -> LoadedModel:
    """Load a `.gguf` file or an HF folder (config.json + *.safetensors + tokenizer.json)."""
    path = Path(path)
    if path.is_dir():
        return _load_hf(path)
    if path.suffix.lower() == ".gguf" or path.is_file():
        return _load_gguf(path)
    raise ValueError(f"[load] {path}: no such file or folder (expected a .gguf file or a Hugging Face folder)")


def _load_gguf(path: Path) -> LoadedModel:
    from eyas.loaders import gguf as g

    spec, weights, meta, owner = g.load_gguf(path)
    tokens = meta.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"[gguf] {path.name}: no tokenizer.ggml.tokens list of strings (a tokenizer is required)")
    tok = Tokenizer.from_gguf(meta, tokens, meta.get("tokenizer.ggml.token_type"), meta.get("tokenizer.ggml.merges"))
    check_vocab(tok, spec, path.name)
    template = None
    if meta.get("tokenizer.chat_template"):
        template = ChatTemplate(meta["tokenizer.chat_template"],
                                bos_token=_tok_text(tokens, meta.get("tokenizer.ggml.bos_token_id")),
                                eos_token=_tok_text(tokens, meta.get("tokenizer.ggml.eos_token_id")))
    ctx, theta = spec.pop("context_length", 0), spec.pop("rope_theta")
    return LoadedModel(path, "gguf", spec, weights, tok, template, ctx, theta, owner, recommended.from_gguf(meta))


def check_vocab(tok: Tokenizer, spec: dict, source: str) -> None:
    """The tokenizer must not produce ids the model has no embedding row for."""
    if tok.vocab_size > spec["vocab_size"]:
        raise ValueError(f"[load] {source}: the tokenizer's vocabulary ({tok.vocab_size} tokens) is larger than "
                         f"the model's ({spec['vocab_size']} embedding rows)")


def _tok_text(tokens: list[str], i) -> str:
    return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else ""


def _load_hf(path: Path) -> LoadedModel:
    from eyas.loaders import hf

    spec, weights, config = hf.load_hf(path)
    tok = Tokenizer.from_hf_folder(path, config)
    check_vocab(tok, spec, path.name)
    tcfg = hf.read_json(path / "tokenizer_config.json") if (path / "tokenizer_config.json").is_file() else {}
    source = tcfg.get("chat_template")
    if isinstance(source, list):  # named templates: take the default one
        source = next((t.get("template") for t in source if t.get("name") == "default"), None)
    if source is None and (path / "chat_template.jinja").is_file():
        source = (path / "chat_template.jinja").read_text(encoding="utf-8")
    template = None
    if source:
        def text(entry):
            return entry.get("content", "") if isinstance(entry, dict) else (entry or "")
        template = ChatTemplate(source, bos_token=text(tcfg.get("bos_token")), eos_token=text(tcfg.get("eos_token")))
    ctx, theta = spec.pop("context_length", 0), spec.pop("rope_theta")
    return LoadedModel(path, "hf", spec, weights, tok, template, ctx, theta, weights, recommended.from_hf_folder(path))
