# Plain greedy decoding against speculative generators that never draft, the first 8 eval_chat prompts,
# interleaved in one process. Modes: "never", the generator whose depth chooser always answers 0 (every round
# a plain step through the generator, with Transformer.advance); "never_dec", the same with decode; "lean", a
# minimal generator that only advances with the drafter's features captured and keeps the pairs (the most that
# trimming the generator's loop could give). From the repository root:
#   PYTHONPATH=build/dev/pkg python docs/results/plain-floor-2026-12-07/plain_floor.py [REPEATS [MODES]]
# MODES: comma-separated, default never,never_dec (the lean comparison: never,lean).
import collections, json, sys

import numpy as np

import eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import adaptive
import eyas.speculative.generator as G
from eyas.speculative.rounds import ROOT_PARENTS

spec = eyas.load(drafter="default", threads=2)
rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
enc = [spec.encode_prompt(r["prompt"], chat=r.get("chat", False)) for r in rows]
T = spec.transformer
orig = adaptive.DepthChooser.choose
ORIG_A = G.advances_in_one_call


def lean_steps(ids):
    T.reset()
    spec.proposer.reset(T.capacity)
    out = T.prefill(np.asarray(ids, np.int32), logits="argmax", capture_aux=True)
    tok = int(out["argmax"])
    pend_a, pend_t = [out["aux"]], [np.array([tok], np.int32)]
    yield [tok]
    root = np.empty(1, np.int32)
    while True:
        root[0] = tok
        r = T.advance(root, ROOT_PARENTS, capture_aux=True)
        pend_a.append(r["aux"])
        pend_t.append(r["tokens"])
        tok = int(r["tokens"][0])
        yield [tok]


def run(m, ids):
    adaptive.DepthChooser.choose = (lambda self: 0) if m.startswith("never") else orig
    G.advances_in_one_call = (lambda t: False) if m == "never_dec" else ORIG_A
    if m == "lean":
        st = generation.TokenStream(lean_steps(ids))
    else:
        kw = {} if m == "plain" else {"proposer": spec.proposer}
        st = generation.stream(T, ids, SamplingParams(temperature=0.0), **kw)
    return generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume().metrics["decode_s"]


modes = ["plain"] + (sys.argv[2] if len(sys.argv) > 2 else "never,never_dec").split(",")
res = collections.defaultdict(float)
for rep in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    for i, ids in enumerate(enc):
        for m in (modes if (rep + i) % 2 == 0 else modes[::-1]):
            dt = run(m, ids)
            if rep: res[m] += dt
print({m: f"{res[m]:.3f}s x{res['plain']/res[m]:.3f}" for m in modes})
