# The engine measure of docs/results/drafter-2026-12-05-stage9/README.md: greedy chain:3 on every prompt of the
# E7 fixtures and eval_chat, tokens per target forward = 1 + accepted / verified rounds (timing-independent).
# Usage, from the repository root: python engine_measure.py DRAFTER_DIR|default [N_CHAT N_E7]
import json, sys
import eyas
files = ["bench/fixtures/e7_doc_summary.jsonl", "bench/fixtures/e7_code_generation.jsonl", "bench/fixtures/e7_essay.jsonl",
         "bench/fixtures/e7_raw_code.jsonl", "bench/prompts/eval_chat.jsonl"]
d = sys.argv[1]
lim_chat = int(sys.argv[2]) if len(sys.argv) > 2 else None
lim_e7 = int(sys.argv[3]) if len(sys.argv) > 3 else None
m = eyas.load(drafter=d, threads=2)
out = {}
for f in files:
    rows = [json.loads(l) for l in open(f)]
    rows = rows[:lim_chat] if "eval_chat" in f and lim_chat else rows[:lim_e7] if lim_e7 and "e7" in f else rows
    acc = drafts = toks = 0
    for r in rows:
        g = m.generate(r["prompt"], chat=r.get("chat", True), max_tokens=r.get("max_tokens", 256), tree="chain:3")
        mt = g.metrics
        acc += mt["num_accepted_tokens"]; drafts += mt["num_drafts"]; toks += len(g.tokens)
    out[f.split("/")[-1]] = round(1 + acc / drafts, 4)
    print(f.split("/")[-1], len(rows), "prompts", toks, "tokens", drafts, "rounds", "tau", out[f.split("/")[-1]], flush=True)
print(json.dumps(out))
