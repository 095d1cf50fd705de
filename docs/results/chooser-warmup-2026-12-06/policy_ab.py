# The adaptive chooser of one or more commits (or adaptive.py files, by path ending .py) against the working tree's, in one process: plain decoding
# and the default policy (auto) with each chooser, greedy, on the first LIMIT prompts of every E7 file and
# eval_chat (or the FILES given), the order rotating per prompt and repeat. From the repository root:
#   python docs/results/chooser-warmup-2026-12-06/policy_ab.py COMMIT[,COMMIT...] LIMIT REPEATS [FILE ...]
# Prints per workload: speed / plain for every chooser, tau, the worst prompt; checks identical output.
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections import defaultdict

import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as generator_module

FILES = ["bench/fixtures/e7_doc_summary.jsonl", "bench/fixtures/e7_code_generation.jsonl",
         "bench/fixtures/e7_essay.jsonl", "bench/fixtures/e7_raw_code.jsonl", "bench/prompts/eval_chat.jsonl"]
commits, limit, repeats = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
FILES = sys.argv[4:] or FILES


def chooser_at(commit):
    path = commit
    if not commit.endswith(".py"):  # a commit: its adaptive.py, written out to import
        src = subprocess.run(["git", "show", f"{commit}:python/eyas/speculative/adaptive.py"], check=True,
                             capture_output=True, text=True).stdout
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(src)
        path = f.name
    spec = importlib.util.spec_from_file_location(f"adaptive_{abs(hash(commit))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DepthChooser


choosers = {**{c: chooser_at(c) for c in commits}, "new": generator_module.DepthChooser}
plain = eyas.load(drafter="none", threads=2)
models = {k: eyas.load(drafter="default", threads=2) for k in choosers}  # each keeps its own carried chooser
sampling = SamplingParams(temperature=0.0)


def run(side, ids, n):
    model = plain if side == "plain" else models[side]
    if side != "plain":
        generator_module.DepthChooser = choosers[side]
    steps = generation.stream(model.transformer, ids, sampling, proposer=model.proposer)
    g = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
    return g.metrics["decode_s"], len(g.tokens) - 1, g.tokens, steps.metrics()


sides = ["plain", *choosers]
time, tokens = defaultdict(float), defaultdict(int)
accepted, rounds = defaultdict(int), defaultdict(int)
identical = True
for path in FILES:
    w = path.split("/")[-1].removesuffix(".jsonl")
    rows = [json.loads(line) for line in open(path)][:limit]
    worst = {s: (9.9, -1) for s in sides[1:]}
    for k, row in enumerate(rows):
        ids = plain.encode_prompt(row["prompt"], chat=row.get("chat", False))
        n = row.get("max_tokens") or 128
        if k == 0:
            for side in sides:
                run(side, ids, 16)
        pt = defaultdict(float)
        for r in range(repeats):
            shift = (k + r) % len(sides)
            outputs = {}
            for side in sides[shift:] + sides[:shift]:
                s, t, out, m = run(side, ids, n)
                time[w, side] += s
                tokens[w, side] += t
                pt[side] += s
                outputs[side] = out
                if m:
                    accepted[w, side] += m["num_accepted_tokens"]
                    rounds[w, side] += m["num_drafts"]
            identical &= all(o == outputs["plain"] for o in outputs.values())
        for side in sides[1:]:
            worst[side] = min(worst[side], (pt["plain"] / pt[side], k))
    base = tokens[w, "plain"] / time[w, "plain"]
    print(f"{w:22s}", " | ".join(
        f"{s} {tokens[w, s] / time[w, s] / base:.3f}x tau {1 + accepted[w, s] / max(rounds[w, s], 1):.2f} "
        f"worst {worst[s][0]:.2f}x (#{worst[s][1]})" for s in sides[1:]), flush=True)
tot = {s: sum(tokens[k] for k in tokens if k[1] == s) / sum(time[k] for k in time if k[1] == s) for s in sides}
print("all:", " | ".join(f"{s} {tot[s] / tot['plain']:.3f}x" for s in sides[1:]),
      "| outputs identical to plain:", "yes" if identical else "NO", flush=True)
