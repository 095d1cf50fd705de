# At the third E7 document's context: a decode step against 2- and 4-node verify forwards, alternating.
import json, sys, time, statistics
import numpy as np
import eyas
from eyas.speculative.rounds import DraftTree, verify, accept, commit
from eyas.sampling import SamplingParams
m = eyas.load(drafter="default", threads=2)
t = m.transformer
row = [json.loads(l) for l in open("bench/fixtures/e7_doc_summary.jsonl")][2]
ids = m.encode_prompt(row["prompt"], chat=row.get("chat", False))
t.reset(); t.prefill(np.asarray(ids, np.int32)); L = t.length
print("context", L, "capture layers?", )
res = {k: [] for k in ("decode_argmax", "forward1_last_aux", "fwd2_argmax_all_aux", "fwd2_all", "verify+accept+commit2", "fwd4_argmax_all_aux")}
tok = np.array([100], np.int32)
mask2 = np.tril(np.ones((2, 2), np.uint8)); d2 = np.arange(2, dtype=np.int32)
mask4 = np.tril(np.ones((4, 4), np.uint8)); d4 = np.arange(4, dtype=np.int32)
tree = DraftTree(np.array([100, 200], np.int32), np.array([-1, 0], np.int32), d2, mask2)
sp = SamplingParams(temperature=0.0)
for r in range(12):
    t0 = time.perf_counter(); t.forward(tok, logits="argmax"); t.truncate(L); res["decode_argmax"].append(time.perf_counter() - t0)
    t0 = time.perf_counter(); t.forward(tok, logits="last", capture_aux=True); t.truncate(L); res["forward1_last_aux"].append(time.perf_counter() - t0)
    t0 = time.perf_counter(); t.forward(tree.tokens, mask=mask2, depths=d2, logits="argmax_all", capture_aux=True); t.truncate(L); res["fwd2_argmax_all_aux"].append(time.perf_counter() - t0)
    t0 = time.perf_counter(); t.forward(tree.tokens, mask=mask2, depths=d2, logits="all"); t.truncate(L); res["fwd2_all"].append(time.perf_counter() - t0)
    t0 = time.perf_counter(); v = verify(t, tree, 3, False, True); a = accept(v, tree, sp, None); commit(t, a); t.truncate(L); res["verify+accept+commit2"].append(time.perf_counter() - t0)
    t0 = time.perf_counter(); t.forward(np.array([100, 200, 300, 400], np.int32), mask=mask4, depths=d4, logits="argmax_all", capture_aux=True); t.truncate(L); res["fwd4_argmax_all_aux"].append(time.perf_counter() - t0)
base = statistics.median(res["decode_argmax"][2:])
for k, v in res.items():
    med = statistics.median(v[2:]); print(f"{k:24s} {med*1e3:6.2f} ms  {med/base:.2f} steps")
