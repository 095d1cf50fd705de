# plain vs never-drafting (shipped generator, chooser patched to 0) vs a minimal generator doing only
# plain steps with feature capture (the upper bound of what trimming the loop could give), interleaved
# From the repository root:
#   PYTHONPATH=build/dev/pkg python docs/results/plain-floor-2026-12-07/floor_lean.py [REPEATS]
import json, time, sys, collections, numpy as np, eyas
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import adaptive
from eyas.speculative.rounds import ROOT_PARENTS, split_aux
spec = eyas.load(drafter="default", threads=2)
rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
enc = [spec.encode_prompt(r["prompt"], chat=r.get("chat", False)) for r in rows]
T = spec.transformer
orig = adaptive.DepthChooser.choose
def lean_steps(ids, sampling):
    T.reset(); spec.proposer.reset(T.capacity)
    out = T.prefill(np.asarray(ids, np.int32), logits="argmax", capture_aux=True)
    tok = int(out["argmax"]); pend_a, pend_t = [out["aux"]], [np.array([tok], np.int32)]
    yield [tok]
    root = np.empty(1, np.int32)
    while True:
        root[0] = tok
        r = T.advance(root, ROOT_PARENTS, capture_aux=True)
        pend_a.append(r["aux"]); t = r["tokens"]; pend_t.append(t)
        tok = int(t[0])
        yield [tok]
def run(m, ids):
    adaptive.DepthChooser.choose = (lambda self: 0) if m == "never" else orig
    if m == "lean":
        st = generation.TokenStream(lean_steps(ids, None))
    else:
        kw = {} if m == "plain" else {"proposer": spec.proposer}
        st = generation.stream(T, ids, SamplingParams(temperature=0.0), **kw)
    return generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume().metrics["decode_s"]
modes = ["plain", "never", "lean"]
res = collections.defaultdict(float)
for rep in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    for i, ids in enumerate(enc):
        for m in (modes if (rep + i) % 2 == 0 else modes[::-1]):
            dt = run(m, ids)
            if rep: res[m] += dt
print({m: f"{res[m]:.3f}s x{res['plain']/res[m]:.3f}" for m in modes})
