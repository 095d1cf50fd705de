# Sampled plain / auto with the fixed cost model / auto with costs measured and carried between sampled
# generations (generator.SAMPLED_MEASURED), one process, order rotating, seed 100 + repeat. Needs the tried change,
# `git apply docs/results/sampled-costs-2026-12-07/measured_carried.diff` (not adopted). From the repository root:
#   python docs/results/sampled-costs-2026-12-07/costs_ab.py TEMPERATURE TOP_P LIMIT REPEATS [FILE ...]
import json, sys
from collections import defaultdict
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm

FILES = ["bench/fixtures/e7_doc_summary.jsonl", "bench/fixtures/e7_code_generation.jsonl",
         "bench/fixtures/e7_essay.jsonl", "bench/fixtures/e7_raw_code.jsonl", "bench/prompts/eval_chat.jsonl"]
T, P, limit, repeats = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
plain = eyas.load(drafter="none", threads=2)
sides = ["plain", "fixed", "measured"]
models = {s: eyas.load(drafter="default", threads=2) for s in sides[1:]}  # each carries its own tables


def run(side, ids, n, seed):
    sp = SamplingParams(temperature=T, top_p=P, seed=seed)
    gm.SAMPLED_MEASURED = side == "measured"
    model = plain if side == "plain" else models[side]
    steps = generation.stream(model.transformer, ids, sp, proposer=None if side == "plain" else model.proposer)
    g = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
    m = steps.metrics() if side != "plain" else {}
    return g.metrics["decode_s"], len(g.tokens) - 1, g.tokens, m


grand = defaultdict(float); grand_tok = defaultdict(int)
for path in sys.argv[5:] or FILES:
    rows = [json.loads(l) for l in open(path)][:limit]
    tot = defaultdict(float); tok = defaultdict(int); rounds = defaultdict(int); acc = defaultdict(int)
    worst = {s: 9.0 for s in sides[1:]}; same = True
    for k, row in enumerate(rows):
        ids = plain.encode_prompt(row["prompt"], chat=row.get("chat", False)); n = row.get("max_tokens") or 128
        if k == 0:
            for s in sides: run(s, ids, 16, 1)
        pt = defaultdict(float)
        for r in range(repeats):
            sh = (k + r) % 3; outs = {}
            for s in sides[sh:] + sides[:sh]:
                t, nt, out, m = run(s, ids, n, 100 + r)
                tot[s] += t; tok[s] += nt; pt[s] += t; outs[s] = out
                rounds[s] += m.get("num_drafts", 0); acc[s] += m.get("num_accepted_tokens", 0)
            same &= outs["fixed"] == outs["plain"] == outs["measured"]
        for s in sides[1:]: worst[s] = min(worst[s], pt["plain"] / pt[s])
    base = tok["plain"] / tot["plain"]
    for s in sides: grand[s] += tot[s]; grand_tok[s] += tok[s]
    print(f"{path.split('/')[-1]:24s} T{T} p{P}: " + " | ".join(
        f"{s} {tok[s]/tot[s]/base:.3f}x tau {1 + acc[s] / max(rounds[s], 1):.2f} worst {worst[s]:.3f}x" for s in sides[1:])
        + f" | same tokens per seed: {same}", flush=True)
base = grand_tok["plain"] / grand["plain"]
print("all: " + " | ".join(f"{s} {grand_tok[s]/grand[s]/base:.3f}x" for s in sides[1:]), flush=True)
