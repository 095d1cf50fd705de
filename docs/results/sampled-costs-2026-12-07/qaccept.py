# What sampled acceptance of the first drafted token would be under other draft rules than eyas's (the drafter's
# argmax, accepted when the target's draw equals it: p(argmax q), docs/speculative.md §4):
# - drafts drawn from the drafter's own distribution q and accepted by rejection: sum over x of min(p, q)
#   (q at temperature 1, at T, at T with top-p);
# - a draft drawn from q with the very uniform the target's draw will use, in the order the sampler draws (ranked
#   nucleus under top-p, id order without), accepted when both land on one token: the overlap of the two draws'
#   intervals (q at T and top-p, at T, at temperature 1 and top-p, at 0.8 T and top-p).
# Sampled chain:1 generations of the first LIMIT prompts of FILE; at each round p is the target's filtered row, q the
# drafter's root logits. From the repository root:
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
def dist(logits, T, P):
    """(probabilities, draw order) as the sampler draws: id order unfiltered, else the ranked nucleus."""
    z = logits.astype(np.float64) / T; z -= z.max(); e = np.exp(z); e /= e.sum()
    if P >= 1:
        return e, np.arange(e.shape[0])[e > 0]
    o = np.lexsort((np.arange(e.shape[0]), -e))  # value descending, then lower id
    c = np.cumsum(e[o]); k = int(np.searchsorted(c, P)) + 1
    o = o[:k]; m = np.zeros_like(e); m[o] = e[o]; m /= m.sum()
    return m, o
def overlap(p, op, q, oq):
    lo_p = np.zeros(p.shape[0]); lo_p[op] = np.cumsum(p[op]) - p[op]
    lo_q = np.zeros(q.shape[0]); lo_q[oq] = np.cumsum(q[oq]) - q[oq]
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
        r = [p[int(np.argmax(full))]]
        r += [np.minimum(p, dist(full, qT, qP)[0]).sum() for qT, qP in ((1.0, 1.0), (T, 1.0), (T, P))]
        r += [overlap(p, op, *dist(full, qT, qP)) for qT, qP in ((T, P), (T, 1.0), (1.0, P), (0.8 * T, P))]
        r.append(p.max())
        rows.append(r)
    return orig(verified, tree, sampling, rng, head)
gm.accept = acc
data = [json.loads(l) for l in open(path)][:limit]
for k, row in enumerate(data):
    ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False)); n = min(row.get("max_tokens") or 128, 256)
    st = generation.stream(spec.transformer, ids, SamplingParams(temperature=T, top_p=P, seed=100 + k), proposer=prop, policy="chain:1")
    generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
r = np.array(rows).mean(0)
print(path.split("/")[-1], f"T{T} p{P} n={len(rows)}: p(argmax q) {r[0]:.3f} | sum min(p, q@T1) {r[1]:.3f} | q@T {r[2]:.3f}"
      f" | q@T,top-p {r[3]:.3f} | shared uniform, q@T,top-p {r[4]:.3f} q@T {r[5]:.3f} q@1,top-p {r[6]:.3f}"
      f" q@0.8T,top-p {r[7]:.3f} | top p bound {r[8]:.3f}")
