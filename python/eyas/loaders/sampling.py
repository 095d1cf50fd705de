"""The sampling a model's authors recommend: GGUF `general.sampling.*` or HF generation_config.json.

Only the fields eyas samples with (temperature, top_p, top_k); an empty dict when the model says nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

# GGUF metadata key -> SamplingParams field (llama.cpp's names).
GGUF_KEYS = {"general.sampling.temp": "temperature", "general.sampling.top_p": "top_p",
             "general.sampling.top_k": "top_k"}


def _clean(raw: dict) -> dict:
    """Keep values SamplingParams accepts; a malformed recommendation is ignored, not fatal."""
    out = {}
    t, p, k = raw.get("temperature"), raw.get("top_p"), raw.get("top_k")
    if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < 100:
        out["temperature"] = float(t)
    if isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p <= 1:
        out["top_p"] = float(p)
    if isinstance(k, int) and not isinstance(k, bool) and k >= 0:
        out["top_k"] = int(k)
    return out


def from_gguf(meta: dict) -> dict:
    return _clean({field: meta[key] for key, field in GGUF_KEYS.items() if key in meta})


def from_hf_folder(folder: Path) -> dict:
    path = Path(folder) / "generation_config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(cfg, dict):
        return {}
    if cfg.get("do_sample") is False:  # the authors decode greedily
        return {"temperature": 0.0}
    if not cfg.get("do_sample"):  # temperature etc. without do_sample are transformers' inert defaults
        return {}
    return _clean(cfg)
