# The drafter's one-pair ingest and one-token propose after various preludes (chat context, default model).
# From the repository root: python docs/results/round-costs-2026-12-07/ingest_after.py
import json, time, statistics
import numpy as np
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
m = eyas.load(drafter="default", threads=2)
t = m.transformer; prop = m.proposer
row = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][1]
ids = m.encode_prompt(row["prompt"], chat=row.get("chat", False))
st = generation.stream(t, ids, SamplingParams(temperature=0.0), proposer=prop)
generation.Generation(st, m.tokenizer, num_prompt_tokens=len(ids), max_tokens=40).consume()
L = t.length; PL = prop.length
print("context", L, PL)
feat = np.random.rand(1, 3 * 576).astype(np.float32); tk = np.array([300], np.int32)
mask2 = np.tril(np.ones((2, 2), np.uint8)); d2 = np.arange(2, dtype=np.int32)
big = np.ones(97 << 20, np.uint8); small = np.ones(11 << 20, np.uint8)
pre = {"none": lambda: None,
       "target_fwd2": lambda: (t.forward(np.array([100, 200], np.int32), mask=mask2, depths=d2, logits="argmax_all", capture_aux=True), t.truncate(L)),
       "sweep97MB": lambda: big.sum(), "sweep11MB": lambda: small.sum()}
from eyas.speculative.policy import TreePolicy
pol = TreePolicy.chain(1)
res = {}
for r in range(30):
    for k, f in pre.items():
        f(); t0 = time.perf_counter(); prop.ingest(feat, tk); t1 = time.perf_counter(); prop.propose(pol); t2 = time.perf_counter(); prop.truncate(PL)
        res.setdefault(k, []).append((t1 - t0, t2 - t1))
for k, v in res.items():
    print(f"after {k:12s} ingest {statistics.median([a for a,b in v[3:]])*1e6:7.1f} us  propose1 {statistics.median([b for a,b in v[3:]])*1e6:6.1f} us")
