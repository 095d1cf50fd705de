# From the repository root: python docs/results/round-costs-2026-12-07/gated_loop.py
# Plain decoding against a speculative generator whose draft_gate always says no (first 8 eval_chat prompts).
import json, time, sys, eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
spec = eyas.load(drafter="default", threads=2)
rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
enc = [spec.encode_prompt(r["prompt"], chat=r.get("chat", False)) for r in rows]
T = spec.transformer
acc = {"dec": 0.0, "n": 0}
class Wrap:
    def __init__(s, t): s.t = t
    def __getattr__(s, k): return getattr(s.t, k)
    def decode(s, *a, **k):
        t0 = time.perf_counter(); r = s.t.decode(*a, **k); acc["dec"] += time.perf_counter() - t0; acc["n"] += 1; return r
W = Wrap(T)
ingest_t = [0.0]
orig = spec.proposer.ingest
def wrapped(*a, **k):
    t0 = time.perf_counter(); r = orig(*a, **k); ingest_t[0] += time.perf_counter() - t0; return r
spec.proposer.ingest = wrapped
def run(mode, ids):
    kw = {}
    if mode != "plain": kw["proposer"] = spec.proposer
    if mode == "gated": kw["draft_gate"] = lambda: False
    st = generation.stream(W, ids, SamplingParams(temperature=0.0), **kw)
    t0 = time.perf_counter(); g = generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128); g.consume()
    return time.perf_counter() - t0
modes = ["plain", "gated"]
res = {m: [0.0, 0.0, 0, 0.0] for m in modes}
for rep in range(4):
    for i, ids in enumerate(enc):
        for m in (modes if (rep + i) % 2 == 0 else modes[::-1]):
            acc["dec"] = 0.0; acc["n"] = 0; ingest_t[0] = 0.0
            dt = run(m, ids)
            if rep > 0:
                r = res[m]; r[0] += dt; r[1] += acc["dec"]; r[2] += acc["n"]; r[3] += ingest_t[0]
for m, (tot, dec, n, ing) in res.items():
    print(f"{m}: total {tot:.3f} s, decode calls {n} taking {dec:.3f} s ({dec/n*1e3:.3f} ms each), ingest {ing:.3f}, rest per step {(tot-dec-ing)/n*1e6:.1f} us")
