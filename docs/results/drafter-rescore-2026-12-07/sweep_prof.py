# EYAS_PROFILE=1 per dispatch of the drafter alone: one-pair ingests and a chain:D propose, a 100 MB sweep between
# rounds ("cold") or not ("warm"). From the repository root:
#   EYAS_PROFILE=1 PYTHONPATH=build/dev/pkg python docs/results/drafter-rescore-2026-12-07/sweep_prof.py 2 cold
import time, sys, numpy as np, eyas
from eyas import _core
from eyas.speculative.policy import TreePolicy
from drafter_setup import CTX, feats, m, p, sweep, toks
pol = TreePolicy.chain(int(sys.argv[1])); cold = sys.argv[2] == "cold"
def it():
    if cold: sweep.sum()
    p.ingest(feats[:1], toks[:1]); p.propose(pol); p.truncate(CTX)
for i in range(20): it()
_core._profile_reset()
for i in range(300): it()
