# Greedy auto on the first 8 eval_chat prompts (after one warm-up pass): each engine call the generator makes
# timed (verify, accept, commit, plain steps, the drafter's ingest, propose by depth) and the rest of the
# decode time per round. From the repository root: python docs/results/round-costs-2026-12-07/chat_round_parts.py
import json, time, collections, eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
import eyas.speculative.proposer as pm
spec = eyas.load(drafter="default", threads=2)
acc = collections.defaultdict(float); cnt = collections.Counter()
def wrap(obj, name, key):
    f = getattr(obj, name)
    def w(*a, **k):
        t0 = time.perf_counter(); r = f(*a, **k); acc[key] += time.perf_counter() - t0; cnt[key] += 1; return r
    setattr(obj, name, w)
wrap(gm, "verify", "verify"); wrap(gm, "accept", "accept"); wrap(gm, "commit", "commit")
wrap(gm.SpeculativeGenerator, "_plain_step", "plain_step")
wrap(type(spec.proposer), "ingest", "ingest")
P = type(spec.proposer); fprop = P.propose
def prop(self, policy):
    t0 = time.perf_counter(); r = fprop(self, policy); k = f"propose_d{policy.depth}"; acc[k] += time.perf_counter() - t0; cnt[k] += 1; return r
P.propose = prop

rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
def go():
    tot = 0.0
    for row in rows:
        ids = spec.encode_prompt(row["prompt"], chat=row.get("chat", False))
        st = generation.stream(spec.transformer, ids, SamplingParams(temperature=0.0), proposer=spec.proposer)
        g = generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume()
        tot += g.metrics["decode_s"]
    return tot
go(); acc.clear(); cnt.clear()
tot = go()
inner = sum(acc.values())
rounds = cnt["verify"] + cnt["plain_step"]
print(f"decode {tot*1e3:.1f} ms, in calls {inner*1e3:.1f} ms, rest {(tot-inner)*1e3:.1f} ms over {rounds} rounds = {(tot-inner)/rounds*1e6:.0f} us/round")
for k in acc: print(f"  {k:10s} {cnt[k]:5d} calls {acc[k]/cnt[k]*1e6:8.1f} us")
