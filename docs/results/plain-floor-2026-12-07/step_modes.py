# A decode step four ways, alternating step by step in one loop (the context truncated back to 100 tokens
# at 900): decode(argmax), decode with the drafter's features captured, advance (a one-node tree), advance
# with capture. From the repository root:
#   PYTHONPATH=build/dev/pkg python docs/results/plain-floor-2026-12-07/step_modes.py
import time, numpy as np, eyas, statistics, collections
from eyas.speculative.rounds import ROOT_PARENTS
spec = eyas.load(drafter="default", threads=2)
T = spec.transformer
rng = np.random.default_rng(0)
T.reset(); T.prefill(rng.integers(100, 40000, 100).astype(np.int32))
tok = 5
modes = ["decode", "adv_cap", "adv", "dec_cap"]
ts = collections.defaultdict(list)
root = np.empty(1, np.int32)
for i in range(1200):
    m = modes[i % 4]
    t0 = time.perf_counter()
    if m == "decode": tok = T.decode(tok, logits="argmax")["argmax"]
    elif m == "dec_cap": tok = T.decode(tok, logits="argmax", capture_aux=True)["argmax"]
    else:
        root[0] = tok
        tok = int(T.advance(root, ROOT_PARENTS, capture_aux=(m == "adv_cap"))["tokens"][0])
    ts[m].append(time.perf_counter() - t0)
    if T.length > 900: T.truncate(100)
for m in modes: print(m, f"median {statistics.median(ts[m][20:])*1e6:.0f} us mean {statistics.mean(ts[m][20:])*1e6:.0f}")
