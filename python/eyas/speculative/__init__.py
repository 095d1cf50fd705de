"""Speculative decoding with EAGLE-3 drafters over EAGLE-2 dynamic trees.

    gen = SpeculativeGenerator(transformer, load_drafter(path, loaded), TreePolicy(4, 5, 16))
    for tokens in gen.steps(prompt_ids, sampler): ...
"""

from eyas.speculative.generator import SpeculativeGenerator
from eyas.speculative.loading import bundled_drafter_for, load_drafter
from eyas.speculative.metrics import SpeculativeMetrics
from eyas.speculative.policy import TreePolicy

__all__ = ["SpeculativeGenerator", "TreePolicy", "SpeculativeMetrics", "load_drafter", "bundled_drafter_for"]
