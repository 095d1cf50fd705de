"""Tokens per target forward in the engine (greedy, chain of 3), drafters side by side on the default model.

Usage, from the repository root: python engine_tau.py NAME=DRAFTER_DIR [NAME=DRAFTER_DIR ...]
(a NAME of "hass" loads its folder with the HASS family; the others as EAGLE-3)."""
import json
import sys

import eyas

FILES = [("bench/prompts/eval_chat.jsonl", 24), ("bench/fixtures/e7_essay.jsonl", 4), ("bench/fixtures/e7_raw_code.jsonl", 4),
         ("bench/fixtures/e7_code_generation.jsonl", 4), ("bench/fixtures/e7_doc_summary.jsonl", 4)]

drafters = dict(a.split("=", 1) for a in sys.argv[1:])
models = {name: eyas.load(threads=2, drafter=d, drafter_family="hass" if name == "hass" else "eagle3")
          for name, d in drafters.items()}
for path, n in FILES:
    rows = [json.loads(line) for line in open(path)][:n]
    per_forward = {}
    for name, m in models.items():
        emitted = forwards = 0
        for r in rows:
            res = m.generate(r["prompt"], chat=r.get("chat") is not False, max_tokens=256, tree="chain:3")
            emitted += res.metrics["num_generated_tokens"] - 1  # the first token comes from prefill
            forwards += res.metrics["num_steps"] - 1
        per_forward[name] = round(emitted / forwards, 3)
    print(path, per_forward, flush=True)
