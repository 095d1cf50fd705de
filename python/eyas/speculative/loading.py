"""`load_drafter`: a drafter path, "default" (the drafter bundled for the target) or "none"."""

from __future__ import annotations

import logging
from pathlib import Path

from eyas.drafters.eagle3 import Drafter, load_eagle3

BUNDLED = Path(__file__).resolve().parent.parent / "drafters" / "bundled"
log = logging.getLogger("eyas.speculative")


def _fits(folder: Path, target_spec: dict) -> bool:
    import json

    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    layer = cfg.get("transformer_layer_config", cfg)
    hidden = cfg.get("target_hidden_size", layer.get("hidden_size"))
    return layer.get("vocab_size") == target_spec["vocab_size"] and hidden == target_spec["hidden_size"]


def bundled_drafter_for(target_spec: dict, family: str = "eagle3") -> Path | None:
    """The first bundled drafter folder of `family` whose vocabulary and hidden size fit the target.
    EAGLE-3 drafters sit in bundled/ itself, every other family in bundled/<family>/."""
    root = BUNDLED if family == "eagle3" else BUNDLED / family
    if not root.is_dir():
        return None
    for folder in sorted(p for p in root.iterdir() if (p / "config.json").is_file()):
        if _fits(folder, target_spec):
            return folder
    return None


def load_drafter(drafter, target, *, weight_type: str = "q8_0") -> Drafter | None:
    """drafter: a folder path, "default", "none"/None, or an already loaded Drafter.
    target: an `eyas.loaders.LoadedModel` (or anything with `.spec` and `.weights`).

    "default" gives None (plain decoding) when no bundled drafter fits the target. weight_type: how
    the drafter's matrices are held ("q8_0", "f32" exact, or "keep" as stored)."""
    if drafter is None or (isinstance(drafter, str) and drafter.lower() == "none"):
        return None
    if isinstance(drafter, Drafter):
        return drafter
    if isinstance(drafter, str) and drafter == "default":
        folder = bundled_drafter_for(target.spec)
        if folder is None:
            log.info("no bundled EAGLE-3 drafter fits this target")
            return None
        return load_eagle3(folder, target.spec, target.weights, weight_type)
    return load_eagle3(Path(drafter), target.spec, target.weights, weight_type)
