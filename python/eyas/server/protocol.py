"""OpenAI request bodies -> checked generation parameters; OpenAI-style errors.

Every check names the offending field (`param`) so clients see which one to fix; unknown fields
are ignored, as OpenAI's own server and the local servers people compare against do.
"""

from __future__ import annotations

import dataclasses
import math

from eyas.sampling import SamplingParams

MAX_STOP = 4
MAX_TOP_LOGPROBS = 20


class ApiError(Exception):
    """An error response: status code and OpenAI's {"error": {message, type, param, code}} body."""

    TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             413: "invalid_request_error", 422: "invalid_request_error", 429: "rate_limit_error",
             500: "server_error", 503: "server_unavailable"}

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.TYPES.get(self.status, "invalid_request_error"),
                          "param": self.param, "code": self.code}}


def bad(param: str, message: str, code: str = "invalid_value") -> ApiError:
    return ApiError(400, f"{param}: {message}", param, code)


@dataclasses.dataclass
class Params:
    """What every generation request carries, checked."""

    sampling: SamplingParams
    max_tokens: int | None  # None: up to the context limit
    stop: list[str] | None
    stream: bool
    include_usage: bool
    logprobs: int | None  # None: off; k: the chosen token's log-probability and k alternatives
    ignore_eos: bool  # vLLM's extension: generate max_tokens even past the end of sequence
    drafter_family: str | None = None  # eyas's extension: the one drafter family for this request


def _number(body: dict, name: str, default, lo: float, hi: float, *, integer: bool = False):
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise bad(name, f"must be {'an integer' if integer else 'a number'}, got {v!r}", "invalid_type")
    if not (lo <= v <= hi) or (isinstance(v, float) and not math.isfinite(v)):
        raise bad(name, f"must be in [{lo}, {hi}], got {v!r}")
    return v


def _stop(body: dict) -> list[str] | None:
    stop = body.get("stop")
    if stop is None:
        return None
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise bad("stop", "must be a string or a list of strings", "invalid_type")
    if len(stop) > MAX_STOP:
        raise bad("stop", f"at most {MAX_STOP} stop sequences, got {len(stop)}")
    return [s for s in stop if s] or None


def boolean(body: dict, name: str, default: bool = False) -> bool:
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise bad(name, f"must be a boolean, got {v!r}", "invalid_type")
    return v


def drafter_family(body: dict, allowed: list[str]) -> str | None:
    """The request's `drafter_family` (an extra body field), one of `allowed`; None: the server's own."""
    v = body.get("drafter_family")
    if v is None:
        return None
    if not isinstance(v, str):
        raise bad("drafter_family", f"must be a string, got {v!r}", "invalid_type")
    if v not in allowed:
        raise bad("drafter_family", f"this server drafts with {', '.join(repr(f) for f in allowed)}; got {v!r}")
    return v


def common(body: dict, defaults: dict, *, chat: bool, drafter_families: list[str] | None = None) -> Params:
    """The sampling/length/stream fields shared by both endpoints. defaults: the model's recommended
    temperature/top_p/top_k for fields the request leaves out. drafter_families: the `drafter_family`
    values the server accepts (None: the field is not read)."""
    if _number(body, "n", 1, 1, 1_000_000, integer=True) != 1:
        raise bad("n", "only n=1 is supported")
    for name in ("presence_penalty", "frequency_penalty"):
        if _number(body, name, 0, -2, 2) != 0:
            raise bad(name, "is not supported (only 0)", "unsupported_parameter")
    if body.get("tools") or body.get("functions"):
        raise bad("tools", "tool calling is not supported", "unsupported_parameter")
    temperature = _number(body, "temperature", defaults.get("temperature", 1.0), 0, 2)
    top_p = _number(body, "top_p", defaults.get("top_p", 1.0), 0, 1)
    if top_p == 0:
        raise bad("top_p", "must be > 0")
    top_k = _number(body, "top_k", defaults.get("top_k", 0), -1, 1_000_000, integer=True)
    seed = _number(body, "seed", None, -(2**63), 2**64 - 1, integer=True)
    max_tokens = _number(body, "max_tokens", None, 1, 2**31, integer=True)
    if chat:
        max_tokens = _number(body, "max_completion_tokens", max_tokens, 1, 2**31, integer=True)
    opts = body.get("stream_options")
    if opts is not None and not isinstance(opts, dict):
        raise bad("stream_options", "must be an object", "invalid_type")
    stream = boolean(body, "stream")
    include_usage = boolean(opts or {}, "include_usage")
    if chat:
        logprobs = boolean(body, "logprobs")
        top = _number(body, "top_logprobs", None, 0, MAX_TOP_LOGPROBS, integer=True)
        if top is not None and not logprobs:
            raise bad("top_logprobs", "needs logprobs=true")
        k = (top or 0) if logprobs else None
    else:
        k = _number(body, "logprobs", None, 0, 5, integer=True)
    sampling = SamplingParams(temperature=float(temperature), top_p=float(top_p), top_k=max(int(top_k), 0),
                              seed=None if seed is None else seed % 2**63)
    family = drafter_family(body, drafter_families) if drafter_families is not None else None
    return Params(sampling, max_tokens, _stop(body), stream, include_usage, k, boolean(body, "ignore_eos"), family)


ROLES = ("system", "user", "assistant", "developer", "tool")


def messages(body: dict) -> list[dict]:
    """Chat messages as {"role", "content": str}; content given as a list of text parts is joined."""
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise bad("messages", "must be a non-empty list of {role, content} objects",
                  "missing_required_parameter" if msgs is None else "invalid_type")
    out = []
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise bad(where, f"needs a role among {', '.join(ROLES)}")
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                    raise bad(f"{where}.content", "only text parts ({type: 'text', text}) are supported")
                parts.append(part["text"])
            content = "".join(parts)
        if content is None and m["role"] == "assistant":
            content = ""
        if not isinstance(content, str):
            raise bad(f"{where}.content", "must be a string or a list of text parts", "invalid_type")
        role = "system" if m["role"] == "developer" else m["role"]
        out.append({"role": role, "content": content})
    return out


def prompt(body: dict):
    """/v1/completions' prompt: a string (or a one-string list), or a list of token ids."""
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
        p = p[0]
    if isinstance(p, str):
        if not p:
            raise bad("prompt", "must not be empty")
        return p
    if isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
        return p
    if p is None:
        raise bad("prompt", "is required", "missing_required_parameter")
    raise bad("prompt", "must be a string or a list of token ids (one prompt per request)", "invalid_type")
