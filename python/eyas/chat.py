"""Chat templates: jinja2 rendering of a model's `chat_template` (GGUF metadata or tokenizer_config.json)."""

from __future__ import annotations

import datetime
import json

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def fail(msg: str) -> None:
    raise ValueError(f"[chat] {msg}")


def _raise(message: str):
    raise ValueError(f"[chat] template error: {message}")


def _tojson(value, indent=None, ensure_ascii=False, sort_keys=False):
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


class ChatTemplate:
    """A compiled template; `render(messages)` gives the prompt text the model was trained on."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = ""):
        if not isinstance(source, str) or not source.strip():
            fail("empty chat template")
        # Same environment options as transformers so templates render identically.
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except jinja2.TemplateSyntaxError as e:
            fail(f"template does not parse: {e}")
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token

    def render(self, messages, *, add_generation_prompt: bool = True, **extra) -> str:
        messages = normalize_messages(messages)
        try:
            return self._template.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                         bos_token=self.bos_token, eos_token=self.eos_token, **extra)
        except jinja2.TemplateError as e:
            fail(f"template failed to render: {e}")

    def encode(self, tokenizer, messages) -> list[int]:
        """Token ids of the rendered prompt (with the assistant header): no BOS is added, since
        the template writes one itself if the model wants it."""
        return tokenizer.encode(self.render(messages, add_generation_prompt=True), add_bos=False)


def normalize_messages(messages) -> list[dict]:
    """A str becomes one user message; a list must hold {"role": str, "content": str} dicts."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, (list, tuple)) or not messages:
        fail("messages must be a non-empty list of {'role', 'content'} dicts or a str")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            fail(f"message {i} must be a dict with str 'role' and 'content'")
        out.append(dict(m))
    return out
