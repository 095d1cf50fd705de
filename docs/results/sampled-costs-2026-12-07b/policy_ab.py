# Plain decoding and several tree policies in one process, the order rotating per prompt and repeat, so every
# policy is paired with the same plain runs and the same memory phases of the machine. Each policy keeps its
# own carried greedy choosers. A policy name ending in "~" runs with the sampled cost model of before
# 2026-12-07 (the generator's `fixed_cost` and `lookup_fixed_cost` swapped for that run); one ending in "*"
# starts every file with nothing carried.
#
# Per policy: speed against plain, tau (tokens per target forward), the implied cost of a round in plain
# steps (tau x time / plain time), the mean verified nodes per forward and the worst prompt.
# From the repository root:
#   TEMP=0.7 TOPP=0.9 SEED=1 python docs/results/sampled-costs-2026-12-07b/policy_ab.py LIMIT REPEATS \
#     auto~,auto,chain:1,chain:2 FILE [FILE ...]
import collections
import json
import os
import sys

import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "advance-2026-12-07"))
from interleave import choosers_of, rotations, use_choosers  # noqa: E402  (the rotation advance_ab.py uses)

limit, repeats, policies = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
sampling = dict(temperature=float(os.environ.get("TEMP", "0")), top_p=float(os.environ.get("TOPP", "1")),
                seed=int(os.environ.get("SEED", "1")))
model = eyas.load(drafter="default", threads=2)
proposer = model.proposer
carried = {p: (None, None) for p in policies}
CURRENT = (gm.fixed_cost, gm.lookup_fixed_cost)


def old_fixed_cost(d, share=0.0, node=0.35):  # the sampled cost model before 2026-12-07
    a = 1.9 * max(0.0, share)
    return 1.0 + d * (node + 0.55 * a) / (1.0 + a)


def old_lookup_fixed_cost(d, share=0.0):
    return old_fixed_cost(d, share, 0.2)


def run(ids, max_tokens, policy):
    gm.fixed_cost, gm.lookup_fixed_cost = (old_fixed_cost, old_lookup_fixed_cost) if policy.endswith("~") else CURRENT
    if policy == "plain":
        steps = generation.stream(model.transformer, ids, SamplingParams(**sampling))
    else:
        use_choosers(proposer, carried[policy])
        tree = policy.rstrip("*~")
        steps = generation.stream(model.transformer, ids, SamplingParams(**sampling), proposer=proposer,
                                  policy=None if tree == "auto" else tree)
    out = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=max_tokens).consume()
    if policy != "plain":
        carried[policy] = choosers_of(proposer)
    return out.metrics


order = ["plain"] + policies
for path in sys.argv[4:]:
    rows = [json.loads(line) for line in open(path)][:limit]
    for p in policies:
        if p.endswith("*"):
            carried[p] = (None, None)
    seconds, tokens, forwards, nodes, rounds = (collections.defaultdict(float) for _ in range(5))
    per_prompt = collections.defaultdict(lambda: collections.defaultdict(float))
    for i, _, p, m in rotations(model, rows, order, repeats, run):
        seconds[p] += m["decode_s"]
        per_prompt[i][p] += m["decode_s"]
        tokens[p] += m["num_generated_tokens"]
        forwards[p] += m.get("num_steps") or m["num_generated_tokens"]
        nodes[p] += (m.get("mean_tree_size") or 1) * (m.get("num_drafts") or 0)
        rounds[p] += m.get("num_drafts") or 0
    cells = []
    for p in policies:
        tau = tokens[p] / forwards[p]
        cells.append(f"{p} {seconds['plain'] / seconds[p]:.3f}x (tau {tau:.2f}, cost {tau * seconds[p] / seconds['plain']:.2f}, "
                     f"nodes {nodes[p] / max(1, rounds[p]):.2f})")
    worst = " ".join(f"{p} {min(per_prompt[i]['plain'] / per_prompt[i][p] for i in per_prompt):.3f}x" for p in policies)
    print(os.path.basename(path), " ".join(cells), "| worst", worst, flush=True)
