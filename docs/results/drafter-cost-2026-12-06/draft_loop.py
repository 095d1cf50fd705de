# Drafting cost of the bundled drafter alone: a loop of one-pair ingests, each followed by a chain:6 propose
# (300-600 positions of drafter context). From the repository root: PYTHONPATH=build/dev/pkg python docs/results/drafter-cost-2026-12-06/draft_loop.py
import time, sys, numpy as np, eyas
from eyas.speculative.policy import TreePolicy
m = eyas.load(drafter="default", threads=2)
p = m.proposer
p.reset(4096)
feats = np.random.rand(300, 3 * 576).astype(np.float32)
toks = np.random.randint(0, 49152, 300).astype(np.int32)
p.ingest(feats, toks)
pol = TreePolicy.chain(6)
t0 = time.perf_counter()
N = 4000
for i in range(N):
    p.ingest(feats[:1], toks[:1]); p.propose(pol)
    if i % 200 == 199: p.truncate(300)
print("ms", (time.perf_counter() - t0) / N * 1e3)
