# Plain decoding and speculative decoding with several drafters on the same prompts, in one process,
# the order rotating per prompt and repeat (the machine's slow phases fall on every side alike); the
# default policy (auto), greedy, decode time only (the first token comes from the prefill in every mode).
# From the repository root:
#   python docs/results/drafter-2026-12-06-stage11/speed_ab.py LIMIT REPEATS DRAFTER [DRAFTER ...]
# DRAFTER: a folder or "default". Prints per workload and drafter: speed / plain, tau; and checks that
# every greedy output equals plain's.
import json
import sys
from collections import defaultdict

import eyas
from eyas import generation
from eyas.sampling import SamplingParams

FILES = ["bench/fixtures/e7_doc_summary.jsonl", "bench/fixtures/e7_code_generation.jsonl",
         "bench/fixtures/e7_essay.jsonl", "bench/fixtures/e7_raw_code.jsonl", "bench/prompts/eval_chat.jsonl"]
limit, repeats, drafters = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
plain = eyas.load(drafter="none", threads=2)
models = {d: eyas.load(drafter=d, threads=2) for d in drafters}
sampling = SamplingParams(temperature=0.0)


def run(model, ids, n):
    steps = generation.stream(model.transformer, ids, sampling, proposer=model.proposer)
    g = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
    return g.metrics["decode_s"], len(g.tokens) - 1, g.tokens, steps.metrics()


sides = ["plain"] + drafters
time = defaultdict(float)  # (workload, side) -> seconds
tokens = defaultdict(int)
accepted, rounds = defaultdict(int), defaultdict(int)
identical = True
for path in FILES:
    w = path.split("/")[-1].removesuffix(".jsonl")
    rows = [json.loads(line) for line in open(path)][:limit]
    for k, row in enumerate(rows):
        ids = plain.encode_prompt(row["prompt"], chat=row.get("chat", False))
        n = row.get("max_tokens") or 128
        if k == 0:  # warm-up, untimed
            for side in sides:
                run(plain if side == "plain" else models[side], ids, 16)
        for r in range(repeats):
            shift = (k + r) % len(sides)
            outputs = {}
            for side in sides[shift:] + sides[:shift]:
                s, t, out, m = run(plain if side == "plain" else models[side], ids, n)
                time[w, side] += s
                tokens[w, side] += t
                outputs[side] = out
                if m:
                    accepted[w, side] += m["num_accepted_tokens"]
                    rounds[w, side] += m["num_drafts"]
            identical &= all(o == outputs["plain"] for o in outputs.values())
    line = [f"{w:22s}"]
    base = tokens[w, "plain"] / time[w, "plain"]
    for d in drafters:
        speed = tokens[w, d] / time[w, d]
        line.append(f"{d.rstrip('/').split('/')[-1]} {speed / base:.3f}x tau {1 + accepted[w, d] / max(rounds[w, d], 1):.2f}")
    print(" | ".join(line), flush=True)
tot = {side: sum(tokens[k] for k in tokens if k[1] == side) / sum(time[k] for k in time if k[1] == side) for side in sides}
print("all: " + " | ".join(f"{d.rstrip('/').split('/')[-1]} {tot[d] / tot['plain']:.3f}x" for d in drafters),
      "| outputs identical to plain:", "yes" if identical else "NO", flush=True)
