"""EAGLE-3 drafters: checkpoint loading (SpecForge / EAGLE / vLLM speculators) and bundled drafters."""

from eyas.drafters.eagle3 import Drafter, DrafterConfig, build_drafter, default_aux_layers, load_eagle3

__all__ = ["Drafter", "DrafterConfig", "build_drafter", "default_aux_layers", "load_eagle3"]
