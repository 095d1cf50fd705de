# Sampled acceptance, timing-independent: chain:3 at temperature 0.7, top-p 0.9, seeds 1-2, every document and
# the first 24 chat prompts; tokens per target forward = 1 + accepted / rounds. Usage: eval_sampled.py DRAFTER
import json, sys
import eyas
m = eyas.load(drafter=sys.argv[1], threads=2)
for f, lim in (("bench/fixtures/e7_doc_summary.jsonl", None), ("bench/fixtures/e7_code_generation.jsonl", None),
               ("bench/prompts/eval_chat.jsonl", 24)):
    rows = [json.loads(l) for l in open(f)][:lim]
    acc = drafts = 0
    for seed in (1, 2):
        for r in rows:
            g = m.generate(r["prompt"], chat=r.get("chat", True), max_tokens=256, tree="chain:3",
                           temperature=0.7, top_p=0.9, seed=seed)
            acc += g.metrics["num_accepted_tokens"]; drafts += g.metrics["num_drafts"]
    print(f.split("/")[-1], len(rows), "prompts x 2 seeds", drafts, "rounds, tau", round(1 + acc / drafts, 4), flush=True)
