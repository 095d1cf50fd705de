"""Build the E7 fixtures (bench/fixtures/*.jsonl) from real documents of the held-out split.

Rows: {"prompt", "chat", "max_tokens", "workload", "source"}. The documents are those that
`eyas.train.realtext.is_held_out` keeps out of training (`prompts --source real`), so a drafter
trained on real text is measured on documents it never saw. Needs bench/fetch_sources.sh first.

    python bench/make_fixtures.py [--out bench/fixtures] [--gguf T.gguf]

--gguf: count tokens with the model's tokenizer and keep only rows that meet the workload's
minimum (documents >= 2048 prompt tokens, code context >= 1024); without it, sizes in characters.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
try:
    import eyas._core  # noqa: F401
except ImportError:  # the fixtures need no compiled core
    sys.modules["eyas._core"] = types.ModuleType("eyas._core")

from eyas.train.realprompts import topic  # noqa: E402
from eyas.train.realtext import SDIST_DIR, code_cut, is_held_out, load_docs, prose_chunk  # noqa: E402

# Requests written for the fixtures (not the training request lists).
DOC_REQUESTS = ["Please summarise this document.", "Explain what this documentation covers and its key points, for someone new to the topic.",
                "Summarize the text above in a few paragraphs.", "Explain the main concepts described here, with examples."]
CODEGEN_REQUESTS = ["Write a complete pytest test module for the code above, covering every public function and class.",
                    "Rewrite this module with full type hints and a docstring for every function.",
                    "Write a new module that uses this code: a command-line tool with argparse that exposes its main features.",
                    "Port the code above to a single self-contained module without external dependencies, keeping every function."]
ESSAY_REQUESTS = ["Write a long essay (about 1,000 words) about {t}.", "Write a detailed, well-structured essay explaining {t}.",
                  "Write an in-depth essay on {t}: what it is, why it matters and how it is used."]
# workload -> (rows, max_tokens, min prompt tokens with --gguf)
WORKLOADS = {"doc_summary": (12, 256, 2048), "code_generation": (10, 512, 1024), "essay": (10, 512, 0), "raw_code": (12, 256, 0)}
DOC_CHARS = (8800, 12000)    # >= 2K tokens of prose
CODE_CHARS = (4200, 7500)    # >= 1K tokens of code


def _rows_doc(prose, rng):
    docs = [d for d in prose if len(d.text) >= DOC_CHARS[0]]
    for d in rng.sample(docs, len(docs)):
        text = prose_chunk(d, rng, *DOC_CHARS)
        if len(text) >= DOC_CHARS[0]:
            yield d, f"{text}\n\n{rng.choice(DOC_REQUESTS)}", True


def _rows_codegen(code, rng):
    for d in rng.sample(code, len(code)):
        cut = code_cut(d, rng, *CODE_CHARS, at_def=False)
        if cut:
            yield d, f"```python\n{cut[0].rstrip()}\n```\n\n{rng.choice(CODEGEN_REQUESTS)}", True


def _rows_essay(prose, rng):
    for d in rng.sample(prose, len(prose)):
        t = topic(d)
        if 8 <= len(t) <= 80:
            yield d, rng.choice(ESSAY_REQUESTS).format(t=t), True


def _rows_raw_code(code, rng):
    for d in rng.sample(code, len(code)):
        cut = code_cut(d, rng, 300, 5000, at_def=True)
        if cut and cut[1].strip():
            yield d, cut[0], False


def build(out_dir, sdist_dir=SDIST_DIR, gguf=None, seed=0):
    docs = [d for d in load_docs(("pydoc", "handbook", "code"), sdist_dir) if is_held_out(d)]
    prose = [d for d in docs if not d.is_code]
    code = [d for d in docs if d.is_code]
    count = None
    if gguf:
        from eyas.loaders import load_model

        lm = load_model(gguf)
        count = lambda text, chat: len(lm.chat_template.encode(lm.tokenizer, text) if chat else lm.tokenizer.encode(text))  # noqa: E731
    makers = {"doc_summary": (_rows_doc, prose), "code_generation": (_rows_codegen, code), "essay": (_rows_essay, prose),
              "raw_code": (_rows_raw_code, code)}
    os.makedirs(out_dir, exist_ok=True)
    for name, (n, max_tokens, min_tokens) in WORKLOADS.items():
        rng = random.Random(f"{seed}/{name}")
        make, pool = makers[name]
        rows, used = [], set()
        for d, prompt, chat in make(pool, rng):
            if (d.group, d.name) in used or (count and count(prompt, chat) < min_tokens):
                continue
            used.add((d.group, d.name))
            rows.append({"prompt": prompt, "chat": chat, "max_tokens": max_tokens, "workload": name,
                         "source": f"{d.source}:{d.group}:{d.name}"})
            if len(rows) == n:
                break
        path = os.path.join(out_dir, f"e7_{name}.jsonl")
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        sizes = [count(r["prompt"], r["chat"]) for r in rows] if count else [len(r["prompt"]) for r in rows]
        unit = "tokens" if count else "chars"
        print(f"{path}: {len(rows)} rows, prompt {min(sizes, default=0)}-{max(sizes, default=0)} {unit}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
    p.add_argument("--sdist-dir", default=SDIST_DIR)
    p.add_argument("--gguf", help="count tokens with this model's tokenizer")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    build(a.out, a.sdist_dir, a.gguf, a.seed)


if __name__ == "__main__":
    main()
