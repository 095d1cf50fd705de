# Plain greedy decoding of the first 8 eval_chat prompts: the target's calls timed, and the decode time
# outside them per step. From the repository root: python docs/results/round-costs-2026-12-07/plain_step_rest.py
import json, time, collections, eyas
from eyas import generation
from eyas.sampling import SamplingParams
m = eyas.load(drafter="none", threads=2)
t = m.transformer
acc = [0.0, 0]
cls = type(t)
import eyas.generation as G
orig_decode = t.decode
rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
class Wrap:
    def __init__(self, t): self.t = t
    def __getattr__(self, k): return getattr(self.t, k)
    def decode(self, *a, **k):
        t0 = time.perf_counter(); r = self.t.decode(*a, **k); acc[0] += time.perf_counter() - t0; acc[1] += 1; return r
    def forward(self, *a, **k):
        t0 = time.perf_counter(); r = self.t.forward(*a, **k); acc[0] += time.perf_counter() - t0; acc[1] += 1; return r
w = Wrap(t)
def go():
    tot = 0.0
    for row in rows:
        ids = m.encode_prompt(row["prompt"], chat=row.get("chat", False))
        st = generation.stream(w, ids, SamplingParams(temperature=0.0))
        g = generation.Generation(st, m.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume()
        tot += g.metrics["decode_s"]
    return tot
go(); acc[:] = [0.0, 0]
tot = go()
print(f"plain decode {tot*1e3:.1f} ms, in target calls {acc[0]*1e3:.1f} ms over {acc[1]} calls, rest {(tot-acc[0])/acc[1]*1e6:.0f} us/step")
