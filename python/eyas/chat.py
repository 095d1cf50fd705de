"""Chat templates: jinja2 rendering of a model's `chat_template` (GGUF metadata or tokenizer_config.json)."""

from __future__ import annotations

import datetime
import json

import jinja2
from jinja2.compiler import CodeGenerator
from jinja2.sandbox import ImmutableSandboxedEnvironment


def fail(msg: str) -> None:
    raise ValueError(f"[chat] {msg}")


def _raise(message: str):
    raise ValueError(f"[chat] template error: {message}")


# What one `*`, `+` or `**` in a template may build (characters, items, bits): a template from a
# model file must not allocate gigabytes in one expression (jinja's sandbox bounds only range()).
MAX_BUILT = 1 << 24


def _size(v) -> int | None:
    return len(v) if isinstance(v, (str, list, tuple)) else None


class _BoundedConcat(CodeGenerator):
    """Compiles `a ~ b` to the environment's bounded_join instead of jinja's unchecked str_join."""

    def visit_Concat(self, node, frame) -> None:
        self.write("environment.bounded_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """jinja's immutable sandbox, with `*`, `+`, `**` and `~` checked before they build anything huge."""

    intercepted_binops = frozenset(["*", "+", "**"])
    code_generator_class = _BoundedConcat

    @staticmethod
    def bounded_join(parts) -> str:
        parts = [str(p) for p in parts]
        if sum(map(len, parts)) > MAX_BUILT:
            _raise(f"'~' would build {sum(map(len, parts))} characters (limit {MAX_BUILT})")
        return "".join(parts)

    def call_binop(self, context, operator, left, right):
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if _size(seq) is not None and isinstance(n, int) and _size(seq) * n > MAX_BUILT:
                    _raise(f"'*' would build {_size(seq) * n} items (limit {MAX_BUILT})")
        elif operator == "+" and _size(left) is not None and _size(right) is not None:
            if _size(left) + _size(right) > MAX_BUILT:
                _raise(f"'+' would build {_size(left) + _size(right)} items (limit {MAX_BUILT})")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
            if right * left.bit_length() > MAX_BUILT:
                _raise(f"'**' would build a number of about {right * left.bit_length()} bits (limit {MAX_BUILT})")
        return super().call_binop(context, operator, left, right)


def _tojson(value, indent=None, ensure_ascii=False, sort_keys=False):
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


class ChatTemplate:
    """A compiled template; `render(messages)` gives the prompt text the model was trained on."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = ""):
        if not isinstance(source, str) or not source.strip():
            fail("empty chat template")
        # Same environment options as transformers so templates render identically.
        env = _BoundedSandbox(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except jinja2.TemplateSyntaxError as e:
            fail(f"template does not parse: {e}")
        except RecursionError:  # jinja's parser recurses once per nested bracket
            fail("template does not parse: its expressions nest too deeply")
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token

    def render(self, messages, *, add_generation_prompt: bool = True, **extra) -> str:
        messages = normalize_messages(messages)
        try:
            pieces, total = [], 0
            for piece in self._template.generate(messages=messages, add_generation_prompt=add_generation_prompt,
                                                 bos_token=self.bos_token, eos_token=self.eos_token, **extra):
                total += len(piece)
                if total > MAX_BUILT:
                    _raise(f"the rendered prompt is over {MAX_BUILT} characters")
                pieces.append(piece)
            return "".join(pieces)
        except (jinja2.TemplateError, ArithmeticError, TypeError, LookupError, RecursionError, MemoryError) as e:
            # the template's own code failing: 'a' + 1, 1 / 0, tojson of undefined, the sandbox's
            # range() limit (OverflowError), a macro calling itself
            fail(f"template failed to render: {type(e).__name__}: {e}")

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
