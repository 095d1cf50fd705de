# Greedy chain:1 generations; at each drafting round also the drafter's top-2 at depth 1 with their probabilities
# and the target's token there: how often the second candidate would have landed, by the drafter's confidence.
# From the repository root: PYTHONPATH=build/dev/pkg python docs/results/drafter-rescore-2026-12-07/width_sim.py bench/prompts/eval_chat.jsonl 24
import json, sys, math, numpy as np, eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative.policy import TreePolicy
import eyas.speculative.generator as G
spec = eyas.load(drafter="default", threads=2)
P = type(spec.proposer); fprop = P.propose
rec = []; cur = {}
def prop(self, policy):
    t = self._runtime.expand(2, 1, 3, -math.inf)
    cur["toks"] = t["tokens"][1:3].tolist(); cur["lp"] = t["scores"][1:3].tolist()
    return fprop(self, policy)
P.propose = prop
fadv = G.advance
def adv(target, tree, *a, **k):
    acc, feats = fadv(target, tree, *a, **k)
    if tree.size == 2 and "toks" in cur:
        rec.append((math.exp(cur["lp"][0]), math.exp(cur["lp"][1]), cur["toks"][0], cur["toks"][1], int(acc.tokens[0])))
        cur.clear()
    return acc, feats
G.advance = adv
F = sys.argv[1]; N = int(sys.argv[2])
rows = [json.loads(l) for l in open(F)][:N]
for row in rows:
    ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False))
    st = generation.stream(spec.transformer, ids, SamplingParams(temperature=0.0), proposer=spec.proposer, policy="chain:1")
    generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=int(sys.argv[3]) if len(sys.argv) > 3 else 128).consume()
r = np.array([(p1, p2, t1 == y, t2 == y) for p1, p2, t1, t2, y in rec], float)
print(f"rounds {len(r)}: top1 {r[:,2].mean():.3f}, top1|top2 {(r[:,2]+r[:,3]).mean():.3f}")
for th in [0.3, 0.5, 0.7, 0.9, 1.01]:
    m = r[:, 0] < th
    print(f"p1 < {th}: share {m.mean():.2f}, top1 acc there {r[m,2].mean() if m.any() else 0:.3f}, top2 adds {r[m,3].mean() if m.any() else 0:.3f}")
np.save("/tmp/w/width_rec.npy", r)
