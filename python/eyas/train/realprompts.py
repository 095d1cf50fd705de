"""Training prompts from real documents (`python -m eyas.train prompts --source real`).

Each prompt is a chunk of a real document (eyas.train.realtext) with a real request about it
(chat), an essay request or a short question on a document's subject with no document attached
(chat), or raw text to continue (chat false):
prose cut at a paragraph, code cut just after a `def`/`class` header. Only documents outside
the held-out split are used (`realtext.is_held_out`), so bench/fixtures stay unseen.
"""

from __future__ import annotations

import random
import re

from .realtext import Doc, code_cut, is_held_out, prose_chunk

PROSE_REQUESTS = [
    "Summarise the text above.", "Summarize this in a few bullet points.", "Explain the main ideas of this text to a newcomer.",
    "What problem does this section address, and how does it solve it?", "Write a short abstract for this document.",
    "List the key terms or commands mentioned and explain each one.", "What are the most important things to remember from this?",
    "Rewrite this section in plain language.", "Give three questions a reader should be able to answer after reading this, with the answers.",
    "Explain this to me as if I had never used a computer terminal.", "What would be a good title for this text? Explain your choice.",
    "Turn this into a step-by-step checklist.", "Which parts of this are easy to get wrong? Explain why.",
    "Give a one-paragraph summary, then explain the details that matter most.", "Write a short FAQ based on this text.",
    "Explain the first part of this text in more detail.", "Is there anything unclear or missing in this documentation?",
]
PROSE_FRAMES = ["{doc}\n\n{req}", "{req}\n\n{doc}", "Here is part of a document:\n\n{doc}\n\n{req}",
                "I am reading this:\n\n\"\"\"\n{doc}\n\"\"\"\n\n{req}"]
CODE_REQUESTS = [
    "Explain what this code does.", "Add docstrings and type hints to this code.", "Write unit tests for this code with pytest.",
    "Review this code and suggest improvements.", "Refactor this code to make it easier to read.",
    "Summarise what this module is for and how its parts fit together.", "Are there any bugs or edge cases this code misses?",
    "Write the next function this module would need, in the same style.", "Explain the most complex function here line by line.",
    "Rewrite the last function in a more efficient way.", "Write documentation in Markdown for this code.",
    "Implement the function whose header ends this code.",
]
CODE_FRAMES = ["```python\n{code}\n```\n\n{req}", "{req}\n\n```python\n{code}\n```", "{code}\n\n{req}"]
ESSAY_REQUESTS = [
    "Write an essay about {t}.", "Write a long, detailed article about {t} for system administrators.",
    "Write a tutorial about {t}, with examples.", "Write a blog post explaining {t} to developers.",
    "Write an essay on the history and purpose of {t}.",
]
# Short requests with no document attached: the target answers from what it knows, which a drafter
# trained only on answers about a pasted document predicts badly (chat acceptance 0.3 against 0.85).
QUESTIONS = [
    "What is {t}?", "How do I use {t}?", "Explain {t} in simple terms.", "What are common mistakes with {t}?",
    "Give me a quick reference for {t}.", "When should I use {t}, and when not?", "Show an example of {t} and explain it.",
    "What are the main features of {t}?", "I am new to this. What is {t} for?", "Compare {t} with its alternatives.",
    "Can you teach me {t} step by step?", "Why would anyone need {t}?",
]
CODE_QUESTIONS = [
    "How do I use the {pkg} Python package? Show examples.", "Write a small Python program that uses {pkg}.",
    "What does the module {mod} do?", "Explain how {mod} is meant to be used, with code.",
    "What problems does {pkg} solve, and how do I install and start using it?",
    "Write a Python function that does something useful with {pkg}, and explain it.",
]
# kind -> share of the prompts
MIX = {"doc_chat": 0.25, "code_chat": 0.17, "essay": 0.10, "question": 0.15, "code_question": 0.08, "raw_prose": 0.10,
       "raw_code": 0.15}
# prose source -> share of the prose prompts (man pages outnumber the other documents)
PROSE_SOURCES = {"pydoc": 0.4, "handbook": 0.3, "man": 0.3}
# Chunk sizes in characters (about 4 chars per token for prose, 3.3 for code): up to ~2K tokens.
PROSE_CHARS = (800, 8000)
CODE_CHARS = (600, 6500)


def topic(doc: Doc) -> str:
    """A document's subject for essay requests: its title without numbering or markup."""
    t = re.sub(r"^[\dA-Z]+(\.\d+)*\.?\s+", "", doc.title.strip())
    t = re.sub(r"[`*:]+", "", t).replace(" --- ", ": ").strip()
    if doc.source == "man":
        t = re.sub(r"\.\d\w*$", "", t)  # git-blame.1 -> git-blame
    return t[:100]


def module_name(doc: Doc) -> str:
    """A code document's dotted module name: src/anyio/__init__.py -> anyio, boltons/listutils.py -> boltons.listutils."""
    parts = [p for p in doc.name.removesuffix(".py").split("/") if p not in ("src", "lib", "__init__")]
    return ".".join(parts) or doc.group


def _one(kind, doc, rng):
    """-> (prompt text, chat) or None when the document has nothing of that kind."""
    if kind == "doc_chat":
        text = prose_chunk(doc, rng, *PROSE_CHARS)
        return rng.choice(PROSE_FRAMES).format(doc=text, req=rng.choice(PROSE_REQUESTS)), True
    if kind == "essay":
        return rng.choice(ESSAY_REQUESTS).format(t=topic(doc)), True
    if kind == "question":
        t = topic(doc).split(": ")[0]  # "zipfile: Work with ZIP archives" -> "zipfile"
        return (rng.choice(QUESTIONS).format(t=t), True) if len(re.findall(r"[A-Za-z]", t)) >= 3 else None
    if kind == "code_question":
        mod = module_name(doc)
        if "test" in mod.split(".")[0] or ".test" in mod or "examples" in mod:  # nobody asks about a test file
            mod = doc.group
        return rng.choice(CODE_QUESTIONS).format(pkg=doc.group, mod=mod), True
    if kind == "raw_prose":
        return prose_chunk(doc, rng, PROSE_CHARS[0] // 2, PROSE_CHARS[1]), False
    cut = code_cut(doc, rng, CODE_CHARS[0] // 2, CODE_CHARS[1], at_def=kind == "raw_code")
    if cut is None:
        return None
    if kind == "raw_code":
        return cut[0], False
    return rng.choice(CODE_FRAMES).format(code=cut[0].rstrip(), req=rng.choice(CODE_REQUESTS)), True


def real_prompts(docs: list[Doc], n: int, seed: int = 0, progress=True):
    """n distinct training prompts (rows {"id", "prompt", "chat", "kind", "source"}) from the
    documents outside the held-out split; kind is "code" for code documents, else "chat"."""
    from tqdm import tqdm

    rng = random.Random(seed)
    train = [d for d in docs if not is_held_out(d)]
    prose = {s: [d for d in train if d.source == s] for s in PROSE_SOURCES}
    prose = {s: ds for s, ds in prose.items() if ds}
    code = [d for d in train if d.is_code]
    kinds = [k for k in MIX if (code if "code" in k else prose)]
    if not kinds:
        raise ValueError("[train] no real documents found (run bench/fetch_sources.sh)")
    weights = [MIX[k] for k in kinds]
    out, seen, tries = [], set(), 0
    bar = tqdm(total=n, desc="real prompts", disable=not progress, mininterval=2)
    while len(out) < n and tries < 20 * n:
        tries += 1
        kind = rng.choices(kinds, weights)[0]
        if "code" in kind:
            doc = rng.choice(code)
        else:
            doc = rng.choice(prose[rng.choices(list(prose), [PROSE_SOURCES[s] for s in prose])[0]])
        made = _one(kind, doc, rng)
        if made is None or len(made[0]) < 40 or made[0] in seen:
            continue
        seen.add(made[0])
        out.append({"id": f"real-{len(out)}", "prompt": made[0], "chat": made[1], "kind": "code" if doc.is_code else "chat",
                    "source": f"{doc.source}:{doc.group}:{doc.name}:{kind}"})
        bar.update(1)
    bar.close()
    return out
