# Plain greedy decoding against the speculative generator whose depth chooser always answers 0 (every round a
# plain step through the generator: "never", with Transformer.advance; "never_dec", with decode), the first 8
# eval_chat prompts, interleaved in one process. From the repository root:
#   PYTHONPATH=build/dev/pkg python docs/results/plain-floor-2026-12-07/plain_floor.py [REPEATS]
import json, time, sys, eyas, collections
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.speculative import adaptive
spec = eyas.load(drafter="default", threads=2)
rows = [json.loads(l) for l in open("bench/prompts/eval_chat.jsonl")][:8]
enc = [spec.encode_prompt(r["prompt"], chat=r.get("chat", False)) for r in rows]
T = spec.transformer
orig = adaptive.DepthChooser.choose
import eyas.speculative.generator as G0
ORIG_A = G0.advances_in_one_call
def run(m, ids):
    adaptive.DepthChooser.choose = (lambda self: 0) if m.startswith("never") else orig
    import eyas.speculative.generator as G
    G.advances_in_one_call = (lambda t: False) if m == "never_dec" else ORIG_A
    kw = {} if m == "plain" else {"proposer": spec.proposer}
    st = generation.stream(T, ids, SamplingParams(temperature=0.0), **kw)
    return generation.Generation(st, spec.tokenizer, num_prompt_tokens=len(ids), max_tokens=128).consume().metrics["decode_s"]
modes = ["plain", "never", "never_dec"]
res = collections.defaultdict(float)
for rep in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    for i, ids in enumerate(enc):
        for m in (modes if (rep + i) % 2 == 0 else modes[::-1]):
            dt = run(m, ids)
            if rep: res[m] += dt
print({m: f"{res[m]:.3f}s x{res['plain']/res[m]:.3f}" for m in modes})
