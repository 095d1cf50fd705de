# One process's decode step and chain forwards of 4 / 8 nodes (greedy argmax for every node) after a
# 128-token random prompt, medians, as JSON. Run alternately against two builds (PYTHONPATH):
#   PYTHONPATH=build/X/pkg python docs/results/q6k-layout-2026-12-07/model_ab.py MODEL.gguf [THREADS]
import json, statistics, sys, time

import numpy as np

import eyas

m = eyas.load(sys.argv[1], drafter="none", threads=int(sys.argv[2]) if len(sys.argv) > 2 else 2)
T = m.transformer
rng = np.random.default_rng(0)
V = m.spec["vocab_size"]
T.reset()
T.prefill(rng.integers(100, V - 100, 128).astype(np.int32))
tok, steps = 7, []
for i in range(48):
    t0 = time.perf_counter()
    tok = T.decode(tok, logits="argmax")["argmax"]
    if i >= 8:  # the first steps include the repacks' page faults
        steps.append(time.perf_counter() - t0)
res = {"step": statistics.median(steps) * 1e3}
for M in (4, 8):
    toks = rng.integers(100, V - 100, M).astype(np.int32)
    mask, depths = np.tril(np.ones((M, M), np.uint8)), np.arange(M, dtype=np.int32)
    T.forward(toks, mask=mask, depths=depths, logits="argmax_all")
    ts = []
    for _ in range(10):
        t0 = time.perf_counter()
        T.forward(toks, mask=mask, depths=depths, logits="argmax_all")
        ts.append(time.perf_counter() - t0)
    res[f"v{M}"] = statistics.median(ts) * 1e3
print(json.dumps(res))
