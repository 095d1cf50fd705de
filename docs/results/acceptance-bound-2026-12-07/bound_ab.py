# Sampled plain / auto with the acceptance bound / auto without it (AcceptanceBound pinned at 1), one process,
# order rotating, 2 seeds per prompt. From the repository root: python docs/results/acceptance-bound-2026-12-07/bound_ab.py TEMPERATURE TOP_P LIMIT REPEATS FILE...
import json, sys
from collections import defaultdict
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
from eyas.speculative.adaptive import AcceptanceBound
class NoBound(AcceptanceBound):
    @property
    def value(self): return 1.0
T, P, limit, repeats = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
plain = eyas.load(drafter="none", threads=2)
spec = eyas.load(drafter="default", threads=2)
def run(side, ids, n, seed):
    sp = SamplingParams(temperature=T, top_p=P, seed=seed)
    gm.AcceptanceBound = NoBound if side == "nobound" else AcceptanceBound
    model = plain if side == "plain" else spec
    steps = generation.stream(model.transformer, ids, sp, proposer=None if side == "plain" else model.proposer)
    g = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
    m = steps.metrics() if side != "plain" else {}
    return g.metrics["decode_s"], len(g.tokens) - 1, g.tokens, m
sides = ["plain", "bound", "nobound"]
for path in sys.argv[5:]:
    rows = [json.loads(l) for l in open(path)][:limit]
    tot = defaultdict(float); tok = defaultdict(int); drafts = defaultdict(int); acc = defaultdict(int)
    worst = {s: 9.0 for s in sides[1:]}
    for k, row in enumerate(rows):
        ids = plain.encode_prompt(row["prompt"], chat=row.get("chat", False)); n = row.get("max_tokens") or 128
        if k == 0:
            for s in sides: run(s, ids, 16, 1)
        pt = defaultdict(float); same = True
        for r in range(repeats):
            sh = (k + r) % 3; outs = {}
            for s in sides[sh:] + sides[:sh]:
                t, nt, out, m = run(s, ids, n, 100 + r)
                tot[s] += t; tok[s] += nt; pt[s] += t; outs[s] = out
                drafts[s] += m.get("num_draft_tokens", 0); acc[s] += m.get("num_accepted_tokens", 0)
            same &= outs["bound"] == outs["plain"] == outs["nobound"]
        for s in sides[1:]: worst[s] = min(worst[s], pt["plain"] / pt[s])
        print(f"  prompt {k}: " + " ".join(f"{s} {pt['plain']/pt[s]:.3f}x" for s in sides[1:]) + f" drafts {dict(drafts)}" + f" same seeds same tokens: {same}", flush=True)
    base = tok["plain"] / tot["plain"]
    print(f"{path.split('/')[-1]} T{T} p{P}: " + " | ".join(f"{s} {tok[s]/tot[s]/base:.3f}x worst {worst[s]:.3f}x drafted {drafts[s]} accepted {acc[s]}" for s in sides[1:]), flush=True)
