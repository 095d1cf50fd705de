# The drafter's prompt window (RuntimeProposer.PROMPT_WINDOW: the last pairs of a long prompt it reads before its
# first draft) at several sizes, plain decoding and each size in one process, the order rotating per prompt and
# repeat; each size keeps its own carried greedy choosers. Speed against plain, tau, and the worst prompt.
# From the repository root: python docs/results/advance-2026-12-07/window_ab.py LIMIT REPEATS 256,512,1024 FILE...
import collections, json, os, sys
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative.proposer import RuntimeProposer
from interleave import choosers_of, rotations, use_choosers

limit, repeats, sizes = int(sys.argv[1]), int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
sampling = SamplingParams(temperature=float(os.environ.get("TEMP", "0")), top_p=float(os.environ.get("TOPP", "1")),
                          seed=int(os.environ.get("SEED", "1")))
model = eyas.load(drafter="default", threads=2)
proposer = model.proposer
carried = {w: (None, None) for w in sizes}
order = ["plain"] + sizes


def run(ids, max_tokens, mode):
    kw = {}
    if mode != "plain":
        RuntimeProposer.PROMPT_WINDOW = mode
        use_choosers(proposer, carried[mode])
        kw["proposer"] = proposer
    out = generation.Generation(generation.stream(model.transformer, ids, sampling, **kw), model.tokenizer,
                                num_prompt_tokens=len(ids), max_tokens=max_tokens).consume()
    if mode != "plain":
        carried[mode] = choosers_of(proposer)
    return out


for path in sys.argv[4:]:
    rows = [json.loads(line) for line in open(path)][:limit]
    seconds, tokens, steps = (collections.defaultdict(float) for _ in range(3))
    per_prompt = collections.defaultdict(lambda: collections.defaultdict(float))
    same, outs = True, collections.defaultdict(dict)
    for i, r, m, out in rotations(model, rows, order, repeats, run):
        seconds[m] += out.metrics["decode_s"]
        per_prompt[i][m] += out.metrics["decode_s"]
        tokens[m] += out.metrics["num_generated_tokens"]
        steps[m] += out.metrics.get("num_steps") or out.metrics["num_generated_tokens"]
        outs[i, r][m] = out.tokens
    for ways in outs.values():
        same &= all(t == ways["plain"] for t in ways.values())
    cells = [f"{w}: {seconds['plain'] / seconds[w]:.3f}x (tau {tokens[w] / steps[w]:.2f}, worst "
             f"{min(per_prompt[i]['plain'] / per_prompt[i][w] for i in per_prompt):.3f}x)" for w in sizes]
    print(os.path.basename(path), " | ".join(cells), f"| same tokens: {same}", flush=True)
