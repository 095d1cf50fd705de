# Greedy (or TEMP/TOPP/SEED sampled) generations of the first N (8) prompts of FILE (eval_chat) under each
# policy, rotating per prompt in one process, each engine call timed. From the repository root:
#   PYTHONPATH=build/dev/pkg python docs/results/drafter-rescore-2026-12-07/tree_parts.py "plain;chain:1;chain:2;chain:3"
import json, time, collections, sys, eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
spec = eyas.load(drafter="default", threads=2)
acc = collections.defaultdict(float); cnt = collections.Counter()
cur = ["x"]
def wrap(obj, name, key):
    f = getattr(obj, name)
    def w(*a, **k):
        t0 = time.perf_counter(); r = f(*a, **k); acc[(cur[0], key)] += time.perf_counter() - t0; cnt[(cur[0], key)] += 1; return r
    setattr(obj, name, w)
wrap(gm, "advance", "advance")
wrap(gm.SpeculativeGenerator, "_plain_step", "plain_step")
wrap(type(spec.proposer), "ingest", "ingest")
wrap(type(spec.proposer), "propose", "propose")
wrap(gm, "drop_unlikely", "drop")
import os
T = float(os.environ.get("TEMP", "0")); TP = float(os.environ.get("TOPP", "1"))
SP = lambda: SamplingParams(temperature=T, top_p=TP, seed=int(os.environ.get("SEED", "1"))) if T > 0 else SamplingParams(temperature=0.0)
rows = [json.loads(l) for l in open(os.environ.get("FILE", "bench/prompts/eval_chat.jsonl"))][:int(os.environ.get("N", "8"))]
pols = sys.argv[1].split(";") if len(sys.argv) > 1 else ["chain:1", "2,1,3"]
dec = collections.defaultdict(float); toks = collections.Counter(); rounds = collections.Counter()
def run(pol, row, record):
    ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False))
    cur[0] = pol if record else "warm"
    st = generation.stream(spec.transformer, ids, SP(), proposer=spec.proposer, policy=None if pol=="plain" else pol) if pol != "plain" else generation.stream(spec.transformer, ids, SP())
    g = generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume()
    if record:
        dec[pol] += g.metrics["decode_s"]; toks[pol] += g.metrics.get("completion_tokens", 0) or g.metrics.get("tokens", 0)
        rounds[pol] += g.metrics.get("rounds", 0)
for r in rows[:2]:
    for p in pols: run(p, r, False)
for rep in range(2):
    for r in rows:
        for p in (pols if rep % 2 == 0 else pols[::-1]): run(p, r, True)
for p in pols:
    print(p, f"decode {dec[p]*1e3:.0f} ms x{dec['plain']/dec[p]:.3f}", {k[1]: f"{cnt[k]} x {acc[k]/cnt[k]*1e6:.0f}us" for k in acc if k[0] == p})
