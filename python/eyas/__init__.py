"""eyas: fast local LLM inference with EAGLE-3 speculative decoding over dynamic draft trees."""

from eyas import _core
from eyas.api import load

__version__ = "0.1.0"
__all__ = ["_core", "__version__", "load"]
