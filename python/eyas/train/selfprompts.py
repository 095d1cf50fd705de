"""Prompt source "self": the target writes the user requests itself (Magpie-style).

An instruction-tuned model fed its chat template up to the start of a user turn continues with
something a user would ask, drawn from its own chat distribution. Those requests reach the
general-chat region that document-bound prompts never do (the drafter's weak spot), and nothing
but the model is read: no data set, no document, nothing reserved for evaluation.

The prefix is found by rendering a conversation whose only user message is a sentinel and
cutting at it, so it is exactly what `eyas.chat.ChatTemplate` renders before a user message
(a default system prompt included) for any template. A sample counts only if it ended with the
end-of-turn token (the template's token right after the user message) or an end-of-sequence id;
samples cut by the token limit are half-written requests and are dropped.
"""

from __future__ import annotations

import re
import time

SENTINEL = "\x00EYAS-SELF-PROMPT-SENTINEL\x00"


def user_turn_split(template) -> tuple[str, str]:
    """-> (text before the user message, text after it) of one rendered user turn."""
    text = template.render([{"role": "user", "content": SENTINEL}], add_generation_prompt=False)
    if text.count(SENTINEL) != 1:
        raise ValueError("[train] the chat template does not render the user message exactly once")
    head, tail = text.split(SENTINEL)
    return head, tail


def end_of_turn_ids(tokenizer, template) -> list[int]:
    """Ids that end a user turn: the tokenizer's end-of-sequence ids, plus the template's first token
    after the user message when it is a special token (ChatML's <|im_end|>, Llama 3's <|eot_id|>).
    A plain-text closer (Mistral's " [/INST]") is not a usable stop id: its first token is ordinary."""
    ids = list(tokenizer.eos_ids)
    _, tail = user_turn_split(template)
    first = tokenizer.encode(tail, add_bos=False)[:1] if tail else []
    if first and first[0] not in ids and tokenizer.decode(first, skip_special=True) == "":
        ids.append(first[0])
    return ids


def prefix_ids(tokenizer, template) -> list[int]:
    """Token ids the target continues from: the user-turn prefix, tokenized as ChatTemplate.encode does."""
    head, _ = user_turn_split(template)
    return tokenizer.encode(head, add_bos=False)


# Filters. A request must say something (MIN_CHARS, MIN_WORDS) and not be a loop: small models at
# temperature 1 sometimes repeat a phrase or a character until the token limit or the end of turn.
MIN_CHARS = 12
MIN_WORDS = 3
_RUN = re.compile(r"(.)\1{9,}")  # the same character ten times or more


def is_degenerate(text: str) -> bool:
    """True for repetitive text: a character run, mostly repeated word trigrams or lines, or one
    word taking most of a longer text."""
    if _RUN.search(text):
        return True
    words = re.findall(r"\w+", text.lower())
    if len(words) >= 12:
        tri = list(zip(words, words[1:], words[2:]))
        if len(set(tri)) < 0.6 * len(tri):
            return True
        if max(words.count(w) for w in set(words)) > 0.4 * len(words):
            return True
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return len(lines) >= 4 and len(set(lines)) < 0.6 * len(lines)


def clean_request(ids, stop_ids, tokenizer) -> str | None:
    """One sample's tokens -> the request text, or None when it is to be dropped (not ended by an
    end-of-turn id, special tokens inside, too short, degenerate)."""
    if not ids or ids[-1] not in stop_ids:
        return None
    body = ids[:-1]
    text = tokenizer.decode(body, skip_special=True)
    if text != tokenizer.decode(body, skip_special=False):  # a role marker or such inside: not a plain request
        return None
    text = text.strip()
    if len(text) < MIN_CHARS or len(re.findall(r"\w+", text)) < MIN_WORDS or is_degenerate(text):
        return None
    return text


def dedup_key(text: str) -> str:
    """Requests equal up to case and whitespace count as duplicates."""
    return " ".join(text.split()).casefold()


def row(text: str) -> dict:
    return {"prompt": text, "chat": True, "kind": "self_chat", "source": "self"}


def self_prompts(target, tokenizer, template, n, *, batch=256, max_new=128, temperature=1.0, top_p=0.95,
                 seed=0, max_rounds=0, max_minutes=0.0, device=None, progress=True, log=print):
    """Sample batches of requests until `n` distinct ones are kept -> list of rows (at most n).

    Stops early after `max_rounds` batches (default: enough for n at a 10 % keep rate) or
    `max_minutes`. On CUDA the batch runs under bf16 autocast like `generate`.
    """
    import torch
    from tqdm import tqdm

    from .generate import generate_batch

    prefix = prefix_ids(tokenizer, template)
    stops = end_of_turn_ids(tokenizer, template)
    dev = device or target.embed.device
    amp = dev.type == "cuda"
    rounds = max_rounds or max(4, -(-10 * n // batch))
    kept, seen = [], set()
    stats = {"sampled": 0, "unfinished": 0, "filtered": 0, "duplicates": 0}
    t0 = time.time()
    bar = tqdm(total=n, desc="self-prompts", disable=not progress, mininterval=2)
    for r in range(rounds):
        if len(kept) >= n or (max_minutes > 0 and time.time() - t0 > 60 * max_minutes):
            break
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            outs = generate_batch(target, [prefix] * batch, max_new, [temperature] * batch, top_p=top_p,
                                  seed=seed * 100003 + r, dtype=torch.bfloat16 if amp else torch.float32,
                                  stop_ids=stops)
        for ids in outs:
            stats["sampled"] += 1
            if not ids or ids[-1] not in stops:
                stats["unfinished"] += 1
                continue
            text = clean_request(ids, stops, tokenizer)
            if text is None:
                stats["filtered"] += 1
            elif dedup_key(text) in seen:
                stats["duplicates"] += 1
            elif len(kept) < n:
                seen.add(dedup_key(text))
                kept.append(row(text))
                bar.update(1)
    bar.close()
    log(f"[train] self-prompts: kept {len(kept)} of {stats['sampled']} samples "
        f"({stats['unfinished']} unfinished, {stats['filtered']} filtered, {stats['duplicates']} duplicates) "
        f"in {time.time() - t0:.0f}s")
    return kept
