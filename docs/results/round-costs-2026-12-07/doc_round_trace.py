# Greedy auto against plain on one prompt of FILE, twice: every round's chooser, depth, accepted tokens and
# time, summed per (drafter | copy, depth). python docs/results/round-costs-2026-12-07/doc_round_trace.py FILE INDEX
import json, sys, time, collections
import numpy as np
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
path, k = sys.argv[1], int(sys.argv[2])
spec = eyas.load(drafter="default", threads=2); plain = eyas.load(drafter="none", threads=2)
log = []
orig = gm.DepthChooser.observe
def obs(self, depth, accepted, seconds):
    log.append((id(self), depth, accepted, seconds, self.plain_cost))
    return orig(self, depth, accepted, seconds)
gm.DepthChooser.observe = obs
row = [json.loads(l) for l in open(path)][k]
ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False)); n = row.get("max_tokens") or 128
def go(m, prop):
    st = generation.stream(m.transformer, ids, SamplingParams(temperature=0.0), proposer=prop)
    g = generation.Generation(st, m.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
    return g.metrics["decode_s"], len(g.tokens)
go(spec, spec.proposer); go(plain, None)
for r in range(2):
    log.clear()
    ts, nt = go(spec, spec.proposer); tp, _ = go(plain, None)
    print(f"rep {r}: spec {ts:.3f}s plain {tp:.3f}s ratio {tp/ts:.3f} tokens {nt}, prompt {len(ids)}")
drafter_ids = {l[0] for l in log if l[1] == 0}
step = min(l[3] for l in log if l[1] == 0) if any(l[1] == 0 for l in log) else None
agg = collections.defaultdict(lambda: [0, 0, 0.0])
for cid, d, a, s, c0 in log:
    key = ("drafter" if cid in drafter_ids else "copy", d); agg[key][0] += 1; agg[key][1] += a; agg[key][2] += s
c0 = [l[3] for l in log if l[1] == 0]
base = np.median(c0) if c0 else 0.006
print("median plain step in spec run: %.2f ms" % (base * 1e3))
for key in sorted(agg):
    nr, acc, s = agg[key]
    print(f"{key[0]:8s} d={key[1]}: rounds {nr:4d} tokens/round {1 + acc / nr:.2f} cost/round {s / nr * 1e3:.2f} ms = {s / nr / base:.2f} steps  time share {s:.3f}s")
