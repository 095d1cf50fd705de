"""Shared by level_cold.py and sweep_prof.py: the default model with its bundled drafter, the drafter holding CTX
random (feature, token) pairs, and a 100 MB array whose sum evicts the caches."""
import numpy as np
import eyas

CTX = 200
m = eyas.load(drafter="default", threads=2)
p = m.proposer
p.reset(8192)
_rng = np.random.default_rng(0)
feats = _rng.random((CTX, 3 * 576), dtype=np.float32)
toks = _rng.integers(0, 49152, CTX).astype(np.int32)
p.ingest(feats, toks)
sweep = np.ones(100 * 2**20 // 8)
