# Where the drafter's first token fails, by the target's own confidence and by the draft vocabulary.
# For each prompt: plain greedy decoding records p(top-1) of every generated token; a chain:1 speculative
# run of the same length then records, per round, whether its one drafted token was accepted. Greedy
# output is the same in both, so round r's draft predicts a known position. From the repository root:
#   python docs/results/chat-acceptance-2026-12-06/first_draft_by_confidence.py FILE.jsonl N MAX_TOKENS [DRAFTER]
import json
import sys

import numpy as np

import eyas
import eyas.speculative.generator as generator
from eyas import generation
from eyas.sampling import SamplingParams

path, n, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
m = eyas.load(None, drafter=sys.argv[4] if len(sys.argv) > 4 else "default", threads=2)
vocab = set(int(x) for x in m.proposer.drafter.d2t)
rounds = []  # accepted drafted tokens of each chain:1 round, in order
accept = generator.accept


def recording_accept(verified, tree, *args, **kwargs):
    out = accept(verified, tree, *args, **kwargs)
    rounds.append(len(out.path) - 1)
    return out


generator.accept = recording_accept
edges = [0.3, 0.5, 0.7, 0.9]
names = ["< 0.3", "0.3-0.5", "0.5-0.7", "0.7-0.9", ">= 0.9"]
drafts = np.zeros((len(names), 4))  # drafts, accepted, in the draft vocabulary, accepted there
reply_tokens = in_vocab = 0
for row in [json.loads(line) for line in open(path)][:n]:
    ids = m.encode_prompt(row["prompt"], chat=row.get("chat", False))
    t = m.transformer
    t.reset()
    out = t.prefill(np.asarray(ids, np.int32), logits="last")
    tokens, confidence = [], []
    for _ in range(max_tokens):
        logits = out["logits"][-1].astype(np.float64)
        p = np.exp(logits - logits.max())
        token = int(np.argmax(logits))
        tokens.append(token)
        confidence.append(p[token] / p.sum())
        if token in m.tokenizer.eos_ids:
            break
        out = t.decode(token, logits="last")
    reply_tokens += len(tokens)
    in_vocab += sum(x in vocab for x in tokens)
    rounds.clear()
    steps = generation.stream(t, ids, SamplingParams(temperature=0.0), proposer=m.proposer, policy="chain:1")
    generation.Generation(steps, m.tokenizer, num_prompt_tokens=len(ids), max_tokens=len(tokens)).consume()
    pos = 1  # the first round drafts the token after the prefill's
    for accepted in rounds:
        if pos >= len(tokens):
            break
        b = int(np.searchsorted(edges, confidence[pos]))
        inside = tokens[pos] in vocab
        drafts[b] += (1, accepted, inside, accepted * inside)
        pos += 1 + accepted
total = drafts[:, 0].sum()
print(f"{path}: {n} prompts, {reply_tokens} reply tokens, {in_vocab / reply_tokens:.3f} of them in the draft vocabulary")
print("target p(top-1) | share of drafts | accepted | drafted token in the vocabulary | accepted there")
for name, (d, a, v, av) in zip(names, drafts):
    print(f"{name} | {d / total:.1%} | {a / max(d, 1):.2f} | {v / max(d, 1):.2f} | {av / max(v, 1):.2f}")
print(f"all | 100% | {drafts[:, 1].sum() / total:.3f} | {drafts[:, 2].sum() / total:.2f} | {drafts[:, 3].sum() / max(drafts[:, 2].sum(), 1):.3f}")
