# Forwards of 1-4 chained nodes interleaved at the third E7 document's context. Run under EYAS_PROFILE=1:
#   EYAS_PROFILE=1 python docs/results/round-costs-2026-12-07/doc_verify_profile.py
import json, sys, numpy as np, eyas
from eyas import _core
m = eyas.load(drafter="default", threads=2); t = m.transformer
row = [json.loads(l) for l in open("bench/fixtures/e7_doc_summary.jsonl")][2]
ids = m.encode_prompt(row["prompt"], chat=row.get("chat", False))
t.reset(); t.prefill(np.asarray(ids, np.int32)); L = t.length
for r in range(25):
    for M in (1, 2, 3, 4):
        mask = np.tril(np.ones((M, M), np.uint8)); d = np.arange(M, dtype=np.int32); toks = (np.arange(M) + 100).astype(np.int32)
        t.forward(toks, mask=mask, depths=d, logits="argmax_all", capture_aux=True); t.truncate(L)
    if r == 4: _core._profile_reset()
