# Sampled first-draft acceptance: the drafter's argmax (accepted when the target's draw equals it, p(argmax q)) against
# a draft drawn from q with the uniform the target's draw will use (accepted when both draws land on one token).
# From the repository root: python docs/results/sampled-costs-2026-12-07/coupled.py TEMPERATURE TOP_P LIMIT FILE
import json, sys
import numpy as np
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
T, P, limit, path = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spec = eyas.load(drafter="default", threads=2)
prop = spec.proposer; d2t = prop.drafter.d2t
def dist(logits, T, P):
    """(probabilities, draw order) as the sampler draws: id order unfiltered, else the ranked nucleus."""
    z = logits.astype(np.float64) / T; z -= z.max(); e = np.exp(z); e /= e.sum()
    if P >= 1:
        return e, np.arange(e.shape[0])
    o = np.lexsort((np.arange(e.shape[0]), -e))  # value descending, then lower id
    c = np.cumsum(e[o]); k = int(np.searchsorted(c, P)) + 1
    o = o[:k]; m = np.zeros_like(e); m[o] = e[o]; m /= m.sum()
    return m, o
def overlap(p, op, q, oq):
    lo_p = np.full(p.shape[0], 0.0); lo_p[op] = np.cumsum(p[op]) - p[op]
    lo_q = np.full(q.shape[0], 0.0); lo_q[oq] = np.cumsum(q[oq]) - q[oq]
    both = np.intersect1d(op, oq)
    a = np.maximum(lo_p[both], lo_q[both]); b = np.minimum(lo_p[both] + p[both], lo_q[both] + q[both])
    return np.clip(b - a, 0, None).sum()
rows = []
orig = gm.accept
def acc(verified, tree, sampling, rng, head):
    lg = np.asarray(verified.logits)[0] if getattr(verified, "logits", None) is not None else None
    ql = np.asarray(prop._runtime.last_logits)
    if lg is not None and tree.size > 1:
        p, op = dist(lg, T, P)
        full = np.full(p.shape[0], -np.inf); ids = d2t if d2t is not None else np.arange(ql.shape[0])
        full[ids] = ql
        a = int(np.argmax(full))
        r = [p[a], np.minimum(p, dist(full, T, P)[0]).sum()]
        for qT, qP in ((T, P), (T, 1.0), (1.0, P), (0.8 * T, P)):
            q, oq = dist(full, qT, qP)
            if P >= 1: oq = np.arange(q.shape[0])[q > 0]  # id order, as the unfiltered draw
            r.append(overlap(p, op, q, oq))
        rows.append(r)
    return orig(verified, tree, sampling, rng, head)
gm.accept = acc
data = [json.loads(l) for l in open(path)][:limit]
for k, row in enumerate(data):
    ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False)); n = min(row.get("max_tokens") or 128, 256)
    st = generation.stream(spec.transformer, ids, SamplingParams(temperature=T, top_p=P, seed=100 + k), proposer=prop, policy="chain:1")
    generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
r = np.array(rows)
print(path.split("/")[-1], f"T{T} p{P} n={len(r)}: p(argmax q) {r[:,0].mean():.3f} | sum min(p,q) {r[:,1].mean():.3f} | coupled q@T,P {r[:,2].mean():.3f} q@T {r[:,3].mean():.3f} q@1,P {r[:,4].mean():.3f} q@0.8T,P {r[:,5].mean():.3f}")
