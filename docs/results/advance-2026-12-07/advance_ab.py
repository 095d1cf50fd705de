# Transformer.advance (one call per round: verify, accept and commit, or a plain step with its draw) against the
# three Python steps it replaced, in one process: plain decoding and `auto` speculative decoding each way, the
# order rotating per prompt and repeat. The old way runs on a proxy of the same Transformer (not a
# `_core.Transformer`, so the generator and plain_steps take their step-by-step paths); its methods are bound
# once, so the proxy adds no lookup per call.
# From the repository root:
#   TEMP=0.7 TOPP=0.9 SEED=1 python docs/results/advance-2026-12-07/advance_ab.py LIMIT REPEATS FILE [FILE ...]
import collections
import json
import os
import sys

import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from interleave import choosers_of, rotations, use_choosers


class StepByStep:
    """The Transformer without `advance`: what a target that is not a `_core.Transformer` gets."""

    def __init__(self, t):
        self._t = t
        for name in ("reset", "truncate", "truncatable", "prefill", "decode", "forward", "commit"):
            setattr(self, name, getattr(t, name))

    def __getattr__(self, name):
        return getattr(self._t, name)


limit, repeats = int(sys.argv[1]), int(sys.argv[2])
sampling = SamplingParams(temperature=float(os.environ.get("TEMP", "0")), top_p=float(os.environ.get("TOPP", "1")),
                          seed=int(os.environ.get("SEED", "1")))
model = eyas.load(drafter="default", threads=2)
proposer = model.proposer
targets = {"new": model.transformer, "old": StepByStep(model.transformer)}
carried = {"new": (None, None), "old": (None, None)}
order = ["plain old", "plain new", "spec old", "spec new"]


def run(ids, max_tokens, mode):
    kind, way = mode.split()
    kw = {}
    if kind == "spec":
        use_choosers(proposer, carried[way])
        kw["proposer"] = proposer
    steps = generation.stream(targets[way], ids, sampling, **kw)
    out = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=max_tokens).consume()
    if kind == "spec":
        carried[way] = choosers_of(proposer)
    return out


for path in sys.argv[3:]:
    rows = [json.loads(line) for line in open(path)][:limit]
    seconds, tokens = collections.defaultdict(float), collections.defaultdict(float)
    same, texts = True, collections.defaultdict(dict)
    for i, r, m, out in rotations(model, rows, order, repeats, run):
        seconds[m] += out.metrics["decode_s"]
        tokens[m] += out.metrics["num_generated_tokens"]
        texts[i, r][m] = out.tokens
    for ways in texts.values():
        same &= all(t == ways["plain old"] for t in ways.values())
    rate = {m: tokens[m] / seconds[m] for m in order}
    print(f"{os.path.basename(path)}: plain new/old {rate['plain new'] / rate['plain old']:.3f}x, "
          f"spec new/old {rate['spec new'] / rate['spec old']:.3f}x; against plain old: spec old "
          f"{rate['spec old'] / rate['plain old']:.3f}x, spec new {rate['spec new'] / rate['plain old']:.3f}x; "
          f"against plain new: spec new {rate['spec new'] / rate['plain new']:.3f}x; same tokens: {same}", flush=True)
