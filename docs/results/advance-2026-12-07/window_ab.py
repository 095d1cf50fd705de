# The drafter's prompt window (RuntimeProposer.PROMPT_WINDOW: the last pairs of a long prompt it reads before its
# first draft) at several sizes, plain decoding and each size in one process, the order rotating per prompt and
# repeat; each size keeps its own carried greedy choosers. Speed against plain, tau, and the worst prompt.
# From the repository root: python docs/results/advance-2026-12-07/window_ab.py LIMIT REPEATS 256,512,1024 FILE...
import collections, json, os, sys
import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import generator as gm
from eyas.speculative.proposer import RuntimeProposer

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
        for table, value in zip((gm._GREEDY_CHOOSERS, gm._GREEDY_LOOKUP_CHOOSERS), carried[mode]):
            table.pop(proposer, None)
            if value is not None:
                table[proposer] = value
        kw["proposer"] = proposer
    out = generation.Generation(generation.stream(model.transformer, ids, sampling, **kw), model.tokenizer,
                                num_prompt_tokens=len(ids), max_tokens=max_tokens).consume()
    if mode != "plain":
        carried[mode] = (gm._GREEDY_CHOOSERS.get(proposer), gm._GREEDY_LOOKUP_CHOOSERS.get(proposer))
    return out


for path in sys.argv[4:]:
    rows = [json.loads(line) for line in open(path)][:limit]
    seconds, tokens, steps = (collections.defaultdict(float) for _ in range(3))
    per_prompt = collections.defaultdict(lambda: collections.defaultdict(float))
    first = model.encode_prompt(rows[0]["prompt"], chat=rows[0].get("chat", False))
    for m in order:
        run(first, 32, m)
    same = True
    for i, row in enumerate(rows):
        ids = model.encode_prompt(row["prompt"], chat=row.get("chat", False))
        for r in range(repeats):
            k = (i * repeats + r) % len(order)
            outs = {}
            for m in order[k:] + order[:k]:
                out = run(ids, row.get("max_tokens") or 128, m)
                seconds[m] += out.metrics["decode_s"]
                per_prompt[i][m] += out.metrics["decode_s"]
                tokens[m] += out.metrics["num_generated_tokens"]
                steps[m] += out.metrics.get("num_steps") or out.metrics["num_generated_tokens"]
                outs[m] = out.tokens
            same &= all(t == outs["plain"] for t in outs.values())
    cells = [f"{w}: {seconds['plain'] / seconds[w]:.3f}x (tau {tokens[w] / steps[w]:.2f}, worst "
             f"{min(per_prompt[i]['plain'] / per_prompt[i][w] for i in per_prompt):.3f}x)" for w in sizes]
    print(os.path.basename(path), " | ".join(cells), f"| same tokens: {same}", flush=True)
