# The bundled drafter's output rows (last_hidden after each ingest: the state its head scores) over greedy
# replies to 12 eval_chat prompts and 3 of each E7 file, saved with the head for head_scoring.py.
#   PYTHONPATH=build/dev/pkg python docs/results/draft-head-scoring-2026-12-07/head_states.py
import json, sys, numpy as np, eyas
from eyas.speculative.proposer import RuntimeProposer
m = eyas.load(drafter="default", threads=2)
states, logits = [], []
orig = RuntimeProposer.ingest
def ingest(self, f, t):
    orig(self, f, t)
    states.append(np.array(self._runtime.last_hidden)); logits.append(int(np.argmax(self._runtime.last_logits)))
RuntimeProposer.ingest = ingest
files = ["bench/prompts/eval_chat.jsonl", "bench/fixtures/e7_code_generation.jsonl", "bench/fixtures/e7_essay.jsonl", "bench/fixtures/e7_doc_summary.jsonl", "bench/fixtures/e7_raw_code.jsonl"]
per = {"bench/prompts/eval_chat.jsonl": 12}
for f in files:
    rows = [json.loads(l) for l in open(f)][: per.get(f, 3)]
    for r in rows:
        m.generate(r["prompt"], max_tokens=160, chat=r.get("chat", False))
    print(f, len(states), file=sys.stderr)
d = m.proposer.drafter
W, wt, shape = d.weights["output"]
np.savez("/tmp/eyas_head_states.npz", states=np.array(states), argmax=np.array(logits), W=np.asarray(W), shape=np.array(shape),
         norm=np.asarray(d.weights["output_norm"][0]), eps=d.spec["rms_eps"], wt=wt)
print("saved", len(states), wt, shape)
