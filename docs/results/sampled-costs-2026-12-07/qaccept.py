# What sampled acceptance of the first drafted token would be if drafts were drawn from the drafter's own
# distribution q and accepted by rejection (sum over x of min(p, q)) instead of the drafter's argmax accepted when the
# target's draw equals it (p(argmax q), eyas's scheme, docs/speculative.md §4). Sampled chain:1 generations of the
# first LIMIT prompts of FILE; at each round p is the target's filtered row, q the drafter's root logits (at
# temperature 1, at T, at T with top-p). From the repository root:
#   python docs/results/sampled-costs-2026-12-07/qaccept.py TEMPERATURE TOP_P LIMIT FILE
import json, sys
import numpy as np
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
T, P, limit, path = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spec = eyas.load(drafter="default", threads=2)
prop = spec.proposer; d2t = prop.drafter.d2t
V = spec.transformer.spec["vocab_size"] if hasattr(spec.transformer, "spec") else None
def filt(logits, T, P):
    z = logits.astype(np.float64) / T; z -= z.max(); e = np.exp(z); e /= e.sum()
    if P < 1:
        o = np.argsort(-e, kind="stable"); c = np.cumsum(e[o]); k = int(np.searchsorted(c, P)) + 1
        m = np.zeros_like(e); m[o[:k]] = e[o[:k]]; e = m / m.sum()
    return e
rows = []
orig = gm.accept
def acc(verified, tree, sampling, rng, head):
    lg = np.asarray(verified.logits)[0] if getattr(verified, "logits", None) is not None else None
    ql = np.asarray(prop._runtime.last_logits)
    if lg is not None and tree.size > 1:
        p = filt(lg, T, P)
        full = np.full(p.shape[0], -np.inf); ids = d2t if d2t is not None else np.arange(ql.shape[0])
        full[ids] = ql
        qd = filt(full, 1.0, 1.0); qT = filt(full, T, 1.0); qTP = filt(full, T, P)
        a = int(np.argmax(full))
        rows.append((p[a], np.minimum(p, qd).sum(), np.minimum(p, qT).sum(), np.minimum(p, qTP).sum(), p.max()))
    return orig(verified, tree, sampling, rng, head)
gm.accept = acc
data = [json.loads(l) for l in open(path)][:limit]
for k, row in enumerate(data):
    ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False)); n = min(row.get("max_tokens") or 128, 256)
    st = generation.stream(spec.transformer, ids, SamplingParams(temperature=T, top_p=P, seed=100 + k), proposer=prop, policy="chain:1")
    generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
r = np.array(rows)
print(path.split("/")[-1], f"T{T} p{P} n={len(r)}: p(argmax q) {r[:,0].mean():.3f} | sum min(p, q@T1) {r[:,1].mean():.3f} | q@T {r[:,2].mean():.3f} | q@T,top-p {r[:,3].mean():.3f} | top p bound {r[:,4].mean():.3f}")
