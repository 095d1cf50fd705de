"""Tokenizer and chat template read from a GGUF file (training-side only).

Builds a ``tokenizers`` byte-level BPE from ``tokenizer.ggml.*`` (gpt2-style models) and renders
the GGUF's ``tokenizer.chat_template`` with jinja2. Used to turn prompts into target token ids.
"""

from __future__ import annotations

import jinja2
import jinja2.sandbox

class GGUFTokenizer:
    def __init__(self, path):
        import gguf
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        r = gguf.GGUFReader(str(path))
        get = lambda k, d=None: r.fields[k].contents() if k in r.fields else d  # noqa: E731
        if get("tokenizer.ggml.model") != "gpt2":
            raise ValueError(f"[train] only gpt2-style BPE tokenizers are supported, got {get('tokenizer.ggml.model')!r}")
        tokens = get("tokenizer.ggml.tokens")
        types = get("tokenizer.ggml.token_type", [1] * len(tokens))
        merges = [tuple(m.split(" ", 1)) for m in get("tokenizer.ggml.merges")]
        vocab = {t: i for i, t in enumerate(tokens)}
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
        pre = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
        if get("tokenizer.ggml.pre") in ("smollm", "qwen2", "llama-bpe"):
            # These pre-tokenizers split digits one by one before the byte-level regex.
            pre.insert(0, pre_tokenizers.Digits(individual_digits=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence(pre)
        tok.decoder = decoders.ByteLevel()
        # Control tokens (type 3) are matched whole, never split by BPE.
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3])
        self.tok = tok
        self.vocab_size = len(tokens)
        self.eos_id = int(get("tokenizer.ggml.eos_token_id", 2))
        self.bos_id = int(get("tokenizer.ggml.bos_token_id", 1))
        self.add_bos = bool(get("tokenizer.ggml.add_bos_token", False))
        tmpl = get("tokenizer.chat_template")
        self.template = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=False).from_string(tmpl) if tmpl else None
        self.bos_text, self.eos_text = tokens[self.bos_id], tokens[self.eos_id]

    def encode(self, text: str) -> list[int]:
        ids = self.tok.encode(text, add_special_tokens=False).ids
        return ([self.bos_id] + ids) if self.add_bos else ids

    def decode(self, ids) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)

    def chat_prompt(self, user: str, system: str | None = None) -> str:
        """Render one user turn plus the assistant header (add_generation_prompt=True)."""
        msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        if self.template is None:
            raise ValueError("[train] the GGUF has no tokenizer.chat_template")
        return self.template.render(messages=msgs, add_generation_prompt=True, bos_token=self.bos_text, eos_token=self.eos_text)

