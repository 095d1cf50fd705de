# The draft head's rescoring (DrafterSpec::rescore_rows: a Q4_0 copy scores the draft vocabulary, the
# best rows are recomputed from the stored head) against the stored head alone, in one process: chain:3
# greedy rounds, each prompt run with every setting in turn. From the repository root:
#   python docs/results/draft-head-rescore-2026-12-06/measure.py DRAFTER LIMIT ROWS [ROWS ...]
# DRAFTER: a folder or "default"; ROWS: rescore_rows values (0 = the stored head only). Prints per file
# and setting: tokens per target forward (tau), drafting time per round, and whether every output
# equals the first setting's (greedy output never depends on the drafts).
import json
import sys
from collections import defaultdict

import eyas
from eyas.drafters.eagle3 import Drafter

FILES = ["bench/fixtures/e7_doc_summary.jsonl", "bench/fixtures/e7_code_generation.jsonl",
         "bench/fixtures/e7_essay.jsonl", "bench/fixtures/e7_raw_code.jsonl", "bench/prompts/eval_chat.jsonl"]


def drafters_in(obj, seen=None):
    """Every Drafter reachable from obj's attributes (the proposer may wrap the EAGLE-3 one)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, Drafter):
        return [obj]
    found = []
    for v in (vars(obj).values() if hasattr(obj, "__dict__") else obj if isinstance(obj, (list, tuple)) else []):
        found += drafters_in(v, seen)
    return found


path, limit, settings = sys.argv[1], int(sys.argv[2]), [int(a) for a in sys.argv[3:]]
models = {}
for rows in settings:
    m = eyas.load(drafter=path, threads=2)
    for d in drafters_in(m.proposer):
        d.spec["rescore_rows"] = rows
        d._runtimes.clear()
    models[rows] = m
acc, rounds, tokens, propose = defaultdict(int), defaultdict(int), defaultdict(int), defaultdict(float)
same = True
for f in FILES:
    name = f.split("/")[-1].removesuffix(".jsonl")
    for k, r in enumerate(json.loads(line) for line in open(f)):
        if k == limit:
            break
        outs = []
        for i in range(len(settings)):
            s = settings[(k + i) % len(settings)]
            g = models[s].generate(r["prompt"], chat=r.get("chat", True), max_tokens=r.get("max_tokens", 256),
                                   tree="chain:3")
            acc[name, s] += g.metrics["num_accepted_tokens"]
            rounds[name, s] += g.metrics["num_drafts"]
            propose[name, s] += g.metrics["propose_s"]
            outs.append(g.tokens)
        same &= all(o == outs[0] for o in outs)
    print(f"{name:20s}", " | ".join(f"rows {s}: tau {1 + acc[name, s] / max(rounds[name, s], 1):.3f}, "
                                      f"draft {1e3 * propose[name, s] / max(rounds[name, s], 1):.3f} ms/round"
                                      for s in settings), flush=True)
print("outputs identical across settings:", "yes" if same else "NO")
