# Two stamped generator files (make_stamped.py) alternating per prompt in one process, greedy auto on the first 8
# eval_chat prompts: per-segment medians of the Python in and between drafting rounds.
#   python docs/results/round-costs-2026-12-07/stamps_ab.py OLD_STAMPED.py NEW_STAMPED.py [FILE]
import json, sys, importlib.util, statistics, collections, eyas
from eyas import generation
from eyas.sampling import SamplingParams
import eyas.speculative.generator as real
mods = {}
for name, path in (("old", sys.argv[1]), ("new", sys.argv[2])):
    spec = importlib.util.spec_from_file_location(f"eyas.speculative.gen_{name}", path)
    g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g); mods[name] = g
models = {k: eyas.load(drafter="default", threads=2) for k in mods}
rows = [json.loads(l) for l in open(sys.argv[3] if len(sys.argv) > 3 else "bench/prompts/eval_chat.jsonl")][:8]
segs = {k: collections.defaultdict(list) for k in mods}; total = collections.defaultdict(list)
def run(k, row, n):
    real.SpeculativeGenerator.steps = mods[k].SpeculativeGenerator.steps
    m = models[k]; ids = m.encode_prompt(row["prompt"], chat=row.get("chat", False))
    mods[k].STAMPS.clear()
    st = generation.stream(m.transformer, ids, SamplingParams(temperature=0.0), proposer=m.proposer)
    g = generation.Generation(st, m.tokenizer, num_prompt_tokens=len(ids), max_tokens=n).consume()
    return g
for row in rows[:1]:
    for k in mods: run(k, row, 32)
for rep in range(2):
    for i, row in enumerate(rows):
        order = list(mods) if (i + rep) % 2 == 0 else list(mods)[::-1]
        for k in order:
            run(k, row, row.get("max_tokens") or 128)
            S = mods[k].STAMPS
            for (k0, t0), (k1, t1) in zip(S, S[1:]):
                segs[k][f"{k0}->{k1}"].append(t1 - t0)
            gap = [t1 - t0 for (k0, t0), (k1, t1) in zip(S, S[1:]) if k0 not in ("F_pre_join",) and not (k0 == "D_pre_choose" and k1 == "A_top") and not (k0 == "C_pre_lookup" and k1 == "A_top")]
keys = sorted(set(segs["old"]) | set(segs["new"]))
tot = {k: 0.0 for k in mods}
for s in keys:
    if s in ("F_pre_join->G_verified", "D_pre_choose->A_top", "C_pre_lookup->A_top") or len(segs["old"][s]) < 20: continue
    o, n = statistics.median(segs["old"][s]) * 1e6, statistics.median(segs["new"][s]) * 1e6
    tot["old"] += o; tot["new"] += n
    print(f"{s:40s} old {o:7.1f} us  new {n:7.1f} us  (n {len(segs['old'][s])}/{len(segs['new'][s])})")
print("sum of segment medians (a drafting round's Python):", {k: round(v, 1) for k, v in tot.items()})
