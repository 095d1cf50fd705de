"""Fuzz targets: each feeds one input (bytes) to one entry point that reads untrusted data.

A target returns normally or raises the clear error its entry point promises (`EXPECTED`); any other
exception, a crash or a hang is a finding. `tests/test_fuzz.py` runs each under atheris for a few
seconds from the seed corpus in `corpus/<target>/` and replays every `regressions/<target>/` input.
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile

import numpy as np


def _scratch_file(data: bytes) -> str:
    """The input as a file (the readers memory-map paths); one scratch file per process, removed at exit."""
    path = os.path.join(tempfile.gettempdir(), f"eyas-fuzz-{os.getpid()}.bin")
    if path not in _SCRATCH:
        _SCRATCH.add(path)
        atexit.register(_remove_scratch, path)
    with open(path, "wb") as f:
        f.write(data)
    return path


_SCRATCH: set[str] = set()


def _remove_scratch(path: str) -> None:
    for p in (path, path + ".gguf"):
        try:
            os.remove(p)
        except FileNotFoundError:
            pass


def gguf(data: bytes) -> None:
    from eyas.loaders import load_model

    path = _scratch_file(data)
    os.replace(path, path + ".gguf")
    load_model(path + ".gguf")


def safetensors(data: bytes) -> None:
    from eyas.loaders.safetensors_mmap import read_tensors

    for t in read_tensors(_scratch_file(data)).values():
        if t.dtype in ("F32", "F16", "BF16", "F64"):
            t.numpy()


def model_config(data: bytes) -> None:
    """An HF config.json: architecture lookup and spec building."""
    from eyas.loaders.hf import spec_from_config

    config = json.loads(data)
    if not isinstance(config, dict):
        raise ValueError("not an object")
    spec_from_config(config)


def drafter_config(data: bytes) -> None:
    from eyas.drafters.eagle3 import parse_config

    config = json.loads(data)
    if not isinstance(config, dict):
        raise ValueError("not an object")
    parse_config(config)


def chat_template(data: bytes) -> None:
    """First line: the template source; the rest: the messages' content."""
    from eyas.chat import ChatTemplate

    text = data.decode("utf-8", errors="replace")
    source, _, content = text.partition("\n")
    ChatTemplate(source, bos_token="<s>", eos_token="</s>").render(
        [{"role": "system", "content": content}, {"role": "user", "content": content[::-1]}])


def sampling_and_tree(data: bytes) -> None:
    """Tree policy strings, sampling parameters and the C++ sampler over hostile logits."""
    import atheris

    from eyas import _core
    from eyas.sampling import SamplingParams
    from eyas.speculative.policy import TreePolicy

    fdp = atheris.FuzzedDataProvider(data)
    try:
        TreePolicy.parse(fdp.ConsumeUnicodeNoSurrogates(16))
    except ValueError:
        pass
    try:
        params = SamplingParams(temperature=fdp.ConsumeRegularFloat() if fdp.ConsumeBool() else fdp.ConsumeFloat(),
                                top_p=fdp.ConsumeFloat(), top_k=fdp.ConsumeIntInRange(-5, 300),
                                seed=fdp.ConsumeIntInRange(0, 2**64 - 1))
    except ValueError:
        params = SamplingParams(temperature=1.0, seed=1)
    n = fdp.ConsumeIntInRange(0, 300)
    logits = np.array(fdp.ConsumeFloatListInRange(n, -1e30, 1e30), dtype=np.float32)
    if fdp.ConsumeBool() and n:
        logits[fdp.ConsumeIntInRange(0, n - 1)] = [np.nan, np.inf, -np.inf][fdp.ConsumeIntInRange(0, 2)]
    token = _core.speculative.sample(logits, rng=params.make_rng(), **params.filters())
    assert 0 <= token < n, f"sampled token {token} outside [0, {n})"


def http_body(data: bytes) -> None:
    """A request body through the server's checks (eyas.server.protocol), as the app applies them."""
    from eyas.server import protocol

    body = json.loads(data)
    if not isinstance(body, dict):
        return
    for chat in (True, False):  # both endpoints' checks, each to its own error
        try:
            (protocol.messages if chat else protocol.prompt)(body)
            protocol.common(body, {"temperature": 0.7}, chat=chat)
        except protocol.ApiError:
            pass


TARGETS = {f.__name__: f for f in (gguf, safetensors, model_config, drafter_config, chat_template, sampling_and_tree,
                                   http_body)}


def expected_errors() -> tuple[type[BaseException], ...]:
    """The clear errors: ValueError (incl. JSON decoding and UnicodeDecodeError) and the API's error."""
    from eyas.server.protocol import ApiError

    return (ValueError, ApiError)
