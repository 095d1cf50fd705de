# The bundled drafter timed alone: a 1-, 2- or 4-pair ingest (which scores the first draft) and a one-token
# propose at 300 positions, with the drafter in cache or after a 64 MiB read evicts it (as the target's
# weight stream does on a 32 MiB L3). `python docs/results/drafter-l3-2026-12-07/ingest_alone.py [q4]`: q4
# requantizes the layer to Q4_0 first (q4drafter.py).
import time, statistics, numpy as np
import eyas
from eyas import _core
spec = eyas.load(drafter="default", threads=2)
import os, sys; sys.path.insert(0, os.path.dirname(__file__)); import q4drafter
if len(sys.argv) > 1: q4drafter.to_q4(spec)
prop = spec.proposer
H = 576
rng = np.random.default_rng(0)
prop.reset(spec.transformer.capacity)
n0 = 300
prop.ingest(rng.standard_normal((n0, 3 * H)).astype(np.float32), rng.integers(0, 40000, n0).astype(np.int32))
from eyas.speculative import TreePolicy
pol = TreePolicy.chain(1)
flush = np.ones(64 * 1024 * 1024 // 4, np.float32)
for k in (1, 2, 4):
    for ev in (False, True):
        ts = []; ps = []
        for i in range(40):
            prop.truncate(n0)
            aux = rng.standard_normal((k, 3 * H)).astype(np.float32); toks = rng.integers(0, 40000, k).astype(np.int32)
            if ev: flush.sum()
            t0 = time.perf_counter(); prop.ingest(aux, toks); t1 = time.perf_counter(); prop.propose(pol); t2 = time.perf_counter()
            ts.append(t1 - t0); ps.append(t2 - t1)
        print(f"pairs {k} evicted {ev}: ingest {statistics.median(ts[5:])*1e3:.3f} ms, propose {statistics.median(ps[5:])*1e3:.3f} ms")
