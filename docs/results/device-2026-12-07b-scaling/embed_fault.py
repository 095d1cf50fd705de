# The token embedding row after the tied head was repacked: decode steps of 295 tokens, each a new token id
# ("new") or one id over and over ("same"), EYAS_PROFILE=1. From the repository root:
#   EYAS_PROFILE=1 PYTHONPATH=build/dev/pkg python docs/results/device-2026-12-07b-scaling/embed_fault.py new 1
import sys, numpy as np, eyas
from eyas import _core
m = eyas.load(drafter="none", threads=2)
T = m.transformer
T.reset(); T.prefill(np.array([1, 2, 3], np.int32), logits="none"); L = T.length
rng = np.random.default_rng(int(sys.argv[2]))
toks = rng.integers(1000, 49000, 300) if sys.argv[1] == "new" else np.full(300, 500)
for t in toks[:5]: T.decode(int(t), logits="argmax"); T.truncate(L)
_core._profile_reset()
for t in toks[5:]: T.decode(int(t), logits="argmax"); T.truncate(L)
