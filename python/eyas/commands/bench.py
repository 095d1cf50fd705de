"""`eyas bench --prompts FILE.jsonl`: plain vs speculative decoding on the same prompts, in one run.

Each prompt runs plain and speculative generation back to back (order alternating per repeat), after
one untimed warm-up of each; the table reports decode speeds, their ratio, the mean accepted length
and whether the greedy outputs were identical.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eyas.api import DEFAULT_KV_DTYPE, DEFAULT_MAX_CONTEXT, KV_DTYPES
from eyas.commands.options import add_drafter_options


def fail(msg: str) -> None:
    raise ValueError(f"[bench] {msg}")


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="compare plain and speculative decoding on a prompt set",
                              description="Plain vs speculative decoding on the prompts of a .jsonl file "
                                          '(one {"prompt": ..., "chat": true} per line).')
    p.add_argument("--prompts", required=True, help="jsonl file of prompts")
    p.add_argument("--model", default=None, help="GGUF file or HF folder (default: bundled SmolLM2-135M)")
    add_drafter_options(p)
    p.add_argument("--tree", default=None, help="tree policy 'TOP_K,DEPTH,TOTAL', 'chain:DEPTH' or 'auto[:MAX_DEPTH]' (default: the drafter's, else "
                        "auto: a chain of 0-3 tokens per round, as deep as pays)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--limit", type=int, default=None, help="use only the first N prompts")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0, help="0 = no limit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--max-context", type=int, default=DEFAULT_MAX_CONTEXT)
    p.add_argument("--kv-dtype", choices=KV_DTYPES, default=DEFAULT_KV_DTYPE,
                   help="KV cache precision: f16 (default, as llama.cpp: half the bytes per token of context) "
                        "or f32")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run)


def read_prompts(path: str | Path, limit: int | None = None) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        fail(f"{path}: no such prompt file")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            fail(f"{path.name}:{n}: not valid JSON ({e})")
        if not isinstance(item, dict) or not isinstance(item.get("prompt"), (str, list)):
            fail(f"{path.name}:{n}: each line must be an object with a 'prompt'")
        out.append({"prompt": item["prompt"], "chat": bool(item.get("chat", False))})
    if not out:
        fail(f"{path.name}: no prompts")
    return out[:limit] if limit else out


def _run(model, ids, sampling, max_tokens, proposer=None, policy=None):
    from eyas import generation

    steps = generation.stream(model.transformer, ids, sampling, proposer=proposer, policy=policy)
    return generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=max_tokens).consume()


def bench(model, prompts: list[dict], *, policy=None, max_tokens=128, repeats=1, temperature=0.0, seed=0,
          top_p=1.0, top_k=0, log=None) -> dict:
    """Paired plain/speculative runs; returns the per-prompt rows and the totals."""
    from eyas.sampling import SamplingParams

    if model.proposer is None:
        fail("no drafter: pass --drafter PATH and a --drafter-family other than 'none' (no bundled drafter fits "
             "this model)")
    sampling = SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)

    def plain(ids):
        return _run(model, ids, sampling, max_tokens)

    def speculative(ids):
        return _run(model, ids, sampling, max_tokens, model.proposer, policy)

    encoded = [model.encode_prompt(p["prompt"], chat=p["chat"]) for p in prompts]
    plain(encoded[0]), speculative(encoded[0])  # warm-up: caches, thread pool, page faults
    rows = []
    for i, ids in enumerate(encoded):
        row = {"prompt": i, "prompt_tokens": len(ids), "plain_s": 0.0, "speculative_s": 0.0, "plain_tokens": 0,
               "speculative_tokens": 0, "identical": True, "num_drafts": 0, "num_accepted_tokens": 0}
        for r in range(repeats):
            runs = {}
            for name in (("plain", "speculative") if r % 2 == 0 else ("speculative", "plain")):
                runs[name] = (plain if name == "plain" else speculative)(ids)
            p, s = runs["plain"], runs["speculative"]
            row["plain_s"] += p.metrics["decode_s"]
            row["speculative_s"] += s.metrics["decode_s"]
            # Decode-phase tokens: the first token comes from the prefill in both modes.
            row["plain_tokens"] += max(len(p.tokens) - 1, 0)
            row["speculative_tokens"] += max(len(s.tokens) - 1, 0)
            row["identical"] &= p.tokens == s.tokens
            row["num_drafts"] += s.metrics["num_drafts"]
            row["num_accepted_tokens"] += s.metrics["num_accepted_tokens"]
        row["plain_tok_s"] = row["plain_tokens"] / row["plain_s"] if row["plain_s"] else 0.0
        row["speculative_tok_s"] = row["speculative_tokens"] / row["speculative_s"] if row["speculative_s"] else 0.0
        row["speedup"] = row["speculative_tok_s"] / row["plain_tok_s"] if row["plain_tok_s"] else 0.0
        row["mean_accepted_length"] = 1 + row["num_accepted_tokens"] / row["num_drafts"] if row["num_drafts"] else 0.0
        rows.append(row)
        if log:
            log(row)
    tot = {k: sum(r[k] for r in rows) for k in ("plain_s", "speculative_s", "plain_tokens", "speculative_tokens", "num_drafts",
                                                  "num_accepted_tokens")}
    plain_tps = tot["plain_tokens"] / tot["plain_s"] if tot["plain_s"] else 0.0
    speculative_tps = tot["speculative_tokens"] / tot["speculative_s"] if tot["speculative_s"] else 0.0
    from eyas.speculative import choose_policy

    pol = choose_policy(policy, model.proposer)
    return {
        "rows": rows,
        "plain_tok_s": plain_tps,
        "speculative_tok_s": speculative_tps,
        "speed_ratio": speculative_tps / plain_tps if plain_tps else 0.0,
        "mean_accepted_length": 1 + tot["num_accepted_tokens"] / tot["num_drafts"] if tot["num_drafts"] else 0.0,
        "identical": all(r["identical"] for r in rows) if temperature == 0 else None,
        "tree": {"top_k": pol.top_k, "depth": pol.depth, "total_tokens": pol.total_tokens, "adaptive": pol.adaptive},
        "max_tokens": max_tokens,
        "repeats": repeats,
        "temperature": temperature,
        "top_p": top_p,
        "top_k": top_k,
        "threads": model.transformer.num_threads,
        "kv_dtype": getattr(model.transformer, "kv_dtype", "f32"),
    }


def _table(result: dict) -> str:
    lines = [f"{'#':>3} {'prompt':>6} {'tokens':>6} {'plain tok/s':>11} {'speculative tok/s':>17} {'speedup':>7} "
             f"{'acc.len':>7} {'same':>4}"]
    for r in result["rows"]:
        lines.append(f"{r['prompt']:>3} {r['prompt_tokens']:>6} {r['speculative_tokens']:>6} {r['plain_tok_s']:>11.1f} "
                     f"{r['speculative_tok_s']:>17.1f} {r['speedup']:>6.2f}x {r['mean_accepted_length']:>7.2f} "
                     f"{'yes' if r['identical'] else 'NO':>4}")
    t = result["tree"]
    same = {True: "yes", False: "NO", None: "n/a (sampling)"}[result["identical"]]
    lines.append(f"all: plain {result['plain_tok_s']:.1f} tok/s, speculative {result['speculative_tok_s']:.1f} tok/s, "
                 f"ratio {result['speed_ratio']:.2f}x, mean accepted length {result['mean_accepted_length']:.2f}, "
                 f"identical {same} | tree top_k={t['top_k']} depth={t['depth']}{' (adaptive)' if t['adaptive'] else ''} "
                 f"total={t['total_tokens']}, "
                 f"threads {result['threads']}, kv {result['kv_dtype']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import eyas
    from eyas.speculative import TreePolicy

    for name in ("max_tokens", "repeats"):
        if getattr(args, name) < 1:
            fail(f"--{name.replace('_', '-')} must be >= 1")
    prompts = read_prompts(args.prompts, args.limit)
    policy = TreePolicy.parse(args.tree) if args.tree else None
    model = eyas.load(args.model, drafter=args.drafter, drafter_family=args.drafter_family, threads=args.threads,
                      max_context=args.max_context, kv_dtype=args.kv_dtype)
    log = None if args.json else (lambda r: print(f"prompt {r['prompt']}: {r['speedup']:.2f}x", file=sys.stderr))
    result = bench(model, prompts, policy=policy, max_tokens=args.max_tokens, repeats=args.repeats,
                   temperature=args.temperature, seed=args.seed, top_p=args.top_p, top_k=args.top_k, log=log)
    if args.json:
        result["prompts_file"] = str(args.prompts)
        result["drafter"] = str(args.drafter)
        result["drafter_family"] = args.drafter_family
        print(json.dumps(result))
    else:
        print(_table(result))
    return 0
