# The engine measures of README.md here, timing-independent: chain:3 rounds, tokens per target forward
# = 1 + accepted / verified rounds, summed over a file's prompts. From the repository root:
#   python docs/results/drafter-2026-12-05-stage9/engine_measure.py DRAFTER_DIR|default
#     greedy: every prompt of the E7 fixtures and eval_chat, each to its fixture's max_tokens (else 256)
#   python docs/results/drafter-2026-12-05-stage9/engine_measure.py DRAFTER_DIR|default --sampled
#     temperature 0.7, top-p 0.9, seeds 1 and 2: every document and code-generation prompt, the first 24
#     of eval_chat, at most 256 tokens each
import json
import sys

import eyas

GREEDY = [("bench/fixtures/e7_doc_summary.jsonl", None), ("bench/fixtures/e7_code_generation.jsonl", None),
          ("bench/fixtures/e7_essay.jsonl", None), ("bench/fixtures/e7_raw_code.jsonl", None),
          ("bench/prompts/eval_chat.jsonl", None)]
SAMPLED = [("bench/fixtures/e7_doc_summary.jsonl", None), ("bench/fixtures/e7_code_generation.jsonl", None),
           ("bench/prompts/eval_chat.jsonl", 24)]

sampled = "--sampled" in sys.argv[2:]
m = eyas.load(drafter=sys.argv[1], threads=2)
runs = [dict(temperature=0.7, top_p=0.9, seed=s) for s in (1, 2)] if sampled else [{}]
for path, limit in SAMPLED if sampled else GREEDY:
    rows = [json.loads(line) for line in open(path)][:limit]
    accepted = rounds = tokens = 0
    for kw in runs:
        for r in rows:
            max_tokens = 256 if sampled else r.get("max_tokens", 256)
            g = m.generate(r["prompt"], chat=r.get("chat", True), max_tokens=max_tokens, tree="chain:3", **kw)
            accepted += g.metrics["num_accepted_tokens"]
            rounds += g.metrics["num_drafts"]
            tokens += len(g.tokens)
    print(path.split("/")[-1], len(rows), "prompts x", len(runs), "runs,", tokens, "tokens,", rounds, "rounds, tau",
          round(1 + accepted / rounds, 4), flush=True)
