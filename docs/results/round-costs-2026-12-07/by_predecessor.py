# From the repository root: python docs/results/round-costs-2026-12-07/by_predecessor.py
# Greedy auto on the first 8 eval_chat prompts: plain steps and verifies timed by what came before them.
import json, time, collections, statistics, eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
spec = eyas.load(drafter="default", threads=2)
times = collections.defaultdict(list); prev = ["start"]
def wrap(obj, name, key):
    f = getattr(obj, name)
    def w(*a, **k):
        t0 = time.perf_counter(); r = f(*a, **k); dt = time.perf_counter() - t0
        if key in ("verify", "plain"):
            n = len(a[1].tokens) if key == "verify" else 1
            times[(key, n, prev[0])].append(dt); prev[0] = key
        return r
    setattr(obj, name, w)
wrap(gm, "verify", "verify"); wrap(gm.SpeculativeGenerator, "_plain_step", "plain")
rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
def go():
    for row in rows:
        ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False))
        prev[0] = "start"
        st = generation.stream(spec.transformer, ids, SamplingParams(temperature=0.0), proposer=spec.proposer)
        generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume()
go(); times.clear(); go(); go()
for k in sorted(times, key=str):
    v = times[k]; print(f"{str(k):30s} n={len(v):4d} median {statistics.median(v)*1e3:6.2f} ms  p25 {sorted(v)[len(v)//4]*1e3:6.2f}")
