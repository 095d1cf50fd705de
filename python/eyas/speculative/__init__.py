"""Speculative decoding: drafters behind the `Proposer` protocol, EAGLE-2 dynamic trees, lossless accept.

    proposer = make_proposer("eagle3", "default", loaded_model)   # None: nothing fits, plain decoding
    gen = SpeculativeGenerator(transformer, proposer, TreePolicy(4, 5, 16))
    for tokens in gen.steps(prompt_ids, SamplingParams(temperature=0.7, seed=1)): ...
"""

from eyas.speculative.generator import SpeculativeGenerator, choose_policy
from eyas.speculative.loading import bundled_drafter_for, load_drafter
from eyas.speculative.metrics import SpeculativeMetrics
from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import PLAIN, Proposer, families, make_proposer, register_proposer
from eyas.speculative.proposers.eagle3 import Eagle3Proposer
from eyas.speculative.proposers.mtp import MtpProposer

__all__ = ["SpeculativeGenerator", "choose_policy", "TreePolicy", "SpeculativeMetrics", "Proposer", "Eagle3Proposer",
           "MtpProposer", "PLAIN", "families", "make_proposer", "register_proposer", "load_drafter", "bundled_drafter_for"]
