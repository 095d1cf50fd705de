"""Speculative decoding with EAGLE-3 drafters over EAGLE-2 dynamic trees.

    gen = SpeculativeGenerator(transformer, load_drafter(path, loaded), TreePolicy(4, 5, 16))
    for tokens in gen.steps(prompt_ids, sampler): ...
"""

from eyas.spec.generator import SpeculativeGenerator
from eyas.spec.loading import bundled_drafter_for, load_drafter
from eyas.spec.metrics import SpecMetrics
from eyas.spec.policy import TreePolicy

__all__ = ["SpeculativeGenerator", "TreePolicy", "SpecMetrics", "load_drafter", "bundled_drafter_for"]
