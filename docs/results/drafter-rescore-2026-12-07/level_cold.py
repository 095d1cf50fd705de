# One-pair drafter ingests, each followed by a chain:d propose (d = 1, 2, 3), at 200 pairs of drafter context;
# between rounds nothing ("none"), a 100 MB numpy sum ("sweep") or a one-row target decode ("target").
# From the repository root: PYTHONPATH=build/dev/pkg python docs/results/drafter-rescore-2026-12-07/level_cold.py target
import time, sys, numpy as np, eyas
from eyas.speculative.policy import TreePolicy
from drafter_setup import CTX, feats, m, p, sweep, toks
T = m.transformer
ids = np.array(m.encode_prompt("Tell me about lighthouses.", chat=True), np.int32)
T.reset(); T.prefill(ids, logits="none"); L = T.length
res = {}
mode = sys.argv[1] if len(sys.argv) > 1 else "sweep"
for rep in range(3):
    for d in [1, 2, 3]:
        pol = TreePolicy.chain(d)
        N = 100; ti = tp = 0.0
        for i in range(N):
            if mode == "sweep": sweep.sum()
            elif mode == "target": T.decode(100, logits="argmax"); T.truncate(L)
            t0 = time.perf_counter(); p.ingest(feats[:1], toks[:1]); t1 = time.perf_counter(); p.propose(pol); t2 = time.perf_counter()
            ti += t1 - t0; tp += t2 - t1
            p.truncate(CTX)
        res.setdefault(d, []).append((ti / N * 1e6, tp / N * 1e6))
for d, v in res.items():
    print(mode, d, "ingest", [f"{a:.0f}" for a, b in v], "propose", [f"{b:.0f}" for a, b in v])
