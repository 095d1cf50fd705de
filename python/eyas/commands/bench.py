"""`eyas bench --prompts FILE.jsonl ...`: plain vs speculative decoding on the same prompts, in one run.

Each prompt runs plain and speculative generation back to back (order alternating per repeat), after
one untimed warm-up of each. A prompt whose timed decoding is still under `--min-seconds` on either
side after `--repeats` pairs gets more pairs, up to four times as many: a 30-token reply decodes in
~0.1 s, where one stall of this class of shared machine moves its ratio by a third. Workload figures
weigh every prompt as `--repeats` pairs, whatever pairs it ran.
Prompts belong to workloads (a line's "workload", else its file's name); the table reports per prompt and per workload the decode speeds, their ratio, the mean accepted
length (tau), the acceptance rate at each depth, the worst single prompt and whether the outputs
were identical (greedy, and sampled: both modes draw plain decoding's tokens for the seed).
`--plot FILE.png` draws the ratios and per-depth acceptance.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eyas.commands.options import add_model_options, load_model


def fail(msg: str) -> None:
    raise ValueError(f"[bench] {msg}")


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="compare plain and speculative decoding on a prompt set",
                              description="Plain vs speculative decoding on the prompts of .jsonl files "
                                          '(one {"prompt": ..., "chat": true} per line), per workload.')
    p.add_argument("--prompts", required=True, nargs="+",
                   help='jsonl files of prompts: one {"prompt": str or messages, "chat": bool, "max_tokens": int '
                        '(optional), "workload": str (optional, default: the file name)} per line')
    add_model_options(p)
    p.add_argument("--max-tokens", type=int, default=128, help="tokens per prompt unless its line sets max_tokens")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--min-seconds", type=float, default=1.0,
                   help="more pairs (up to 4x --repeats) for a prompt until each side has decoded this long")
    p.add_argument("--limit", type=int, default=None, help="use only the first N prompts")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0, help="0 = no limit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="also draw speed ratio and per-depth acceptance per workload (needs matplotlib: "
                        "pip install 'eyas[plot]')")
    p.set_defaults(func=run)


def read_prompts(path: str | Path, limit: int | None = None) -> list[dict]:
    """The prompts of one jsonl file; `workload` defaults to the file's name without .jsonl."""
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
        max_tokens = item.get("max_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                       or max_tokens < 1):
            fail(f"{path.name}:{n}: max_tokens must be a positive integer, got {max_tokens!r}")
        workload = item.get("workload", path.stem)
        if not isinstance(workload, str) or not workload:
            fail(f"{path.name}:{n}: workload must be a non-empty string")
        out.append({"prompt": item["prompt"], "chat": bool(item.get("chat", False)), "workload": workload,
                    "max_tokens": max_tokens})
    if not out:
        fail(f"{path.name}: no prompts")
    return out[:limit] if limit else out


def _run(model, ids, sampling, max_tokens, proposer=None, policy=None):
    from eyas import generation

    steps = generation.stream(model.transformer, ids, sampling, proposer=proposer, policy=policy)
    return generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=max_tokens).consume()


def bench(model, prompts: list[dict], *, policy=None, max_tokens=128, repeats=1, temperature=0.0, seed=0,
          top_p=1.0, top_k=0, min_seconds=0.0, log=None) -> dict:
    """Paired plain/speculative runs; returns the per-prompt rows, per-workload summaries and totals.
    min_seconds: a prompt runs more pairs, up to MAX_EXTRA_PAIRS x repeats in all, while either side's
    decode time is under it."""
    from eyas.sampling import SamplingParams

    if model.proposer is None:
        fail("no drafter: pass --drafter PATH and a --drafter-family other than 'none' (no bundled drafter fits "
             "this model)")
    sampling = SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)

    def plain(ids, n):
        return _run(model, ids, sampling, n)

    def speculative(ids, n):
        return _run(model, ids, sampling, n, model.proposer, policy)

    encoded = [model.encode_prompt(p["prompt"], chat=p["chat"]) for p in prompts]
    warm = min(max_tokens, 32)
    plain(encoded[0], warm), speculative(encoded[0], warm)  # warm-up: caches, thread pool, page faults
    rows = []
    for i, (item, ids) in enumerate(zip(prompts, encoded)):
        n = item.get("max_tokens") or max_tokens
        row = new_row(i, item.get("workload", "prompts"), len(ids))
        r = 0
        while r < repeats or (r < MAX_EXTRA_PAIRS * repeats and min(row["plain_s"], row["speculative_s"]) < min_seconds):
            runs = {}
            for name in (("plain", "speculative") if r % 2 == 0 else ("speculative", "plain")):
                runs[name] = (plain if name == "plain" else speculative)(ids, n)
            add_pair(row, runs["plain"], runs["speculative"])
            r += 1
        row.update(_rates(row))
        rows.append(row)
        if log:
            log(row)
    from eyas.speculative import choose_policy

    pol = choose_policy(policy, model.proposer)
    workloads = {}
    for w in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == w]
        worst = min(mine, key=lambda r: r["speedup"])
        workloads[w] = {**_rates(_pooled(mine, repeats)), "prompts": len(mine), "worst_prompt": worst["prompt"],
                        "worst_speedup": worst["speedup"], "speedup_per_repeat": repeat_speedups(mine),
                        "identical": all(r["identical"] for r in mine)}
    total = _rates(_pooled(rows, repeats))
    return {
        "rows": rows,
        "workloads": workloads,
        "plain_tok_s": total["plain_tok_s"],
        "speculative_tok_s": total["speculative_tok_s"],
        "speed_ratio": total["speedup"],
        "speed_ratio_per_repeat": repeat_speedups(rows),
        "mean_accepted_length": total["mean_accepted_length"],
        "acceptance_per_pos": total["acceptance_per_pos"],
        "identical": all(r["identical"] for r in rows),
        "tree": {"top_k": pol.top_k, "depth": pol.depth, "total_tokens": pol.total_tokens, "adaptive": pol.adaptive,
                 "lookup": pol.lookup},
        "max_tokens": max_tokens,
        "repeats": repeats,
        "min_seconds": min_seconds,
        "temperature": temperature,
        "top_p": top_p,
        "top_k": top_k,
        "threads": model.transformer.num_threads,
        "kv_dtype": getattr(model.transformer, "kv_dtype", "f32"),
    }


# Pairs a short prompt may run, as a multiple of --repeats (bench's min_seconds).
MAX_EXTRA_PAIRS = 4

_SUMMED = ("plain_s", "speculative_s", "plain_tokens", "speculative_tokens", "num_drafts", "num_accepted_tokens",
           "num_lookup_drafts", "num_lookup_accepted_tokens")


def new_row(prompt: int, workload: str, prompt_tokens: int) -> dict:
    """The counters of one prompt's paired runs, before any run."""
    return {"prompt": prompt, "workload": workload, "prompt_tokens": prompt_tokens, "plain_s": 0.0,
            "speculative_s": 0.0, "plain_tokens": 0, "speculative_tokens": 0, "identical": True,
            "num_drafts": 0, "num_accepted_tokens": 0, "num_lookup_drafts": 0, "num_lookup_accepted_tokens": 0,
            "accepted_per_pos": [], "tried_per_pos": [],
            "per_repeat": []}  # [plain_s, plain_tokens, speculative_s, speculative_tokens] of each pair, in order


def add_pair(row: dict, plain, speculative) -> None:
    """Adds one plain and one speculative run (consumed `Generation`s) of the row's prompt."""
    pair = [plain.metrics["decode_s"], max(len(plain.tokens) - 1, 0),
            speculative.metrics["decode_s"], max(len(speculative.tokens) - 1, 0)]
    row["plain_s"] += pair[0]
    row["speculative_s"] += pair[2]
    # Decode-phase tokens: the first token comes from the prefill in both modes.
    row["plain_tokens"] += pair[1]
    row["speculative_tokens"] += pair[3]
    row["per_repeat"].append(pair)
    row["identical"] &= plain.tokens == speculative.tokens
    for key in ("num_drafts", "num_accepted_tokens", "num_lookup_drafts", "num_lookup_accepted_tokens"):
        row[key] += speculative.metrics.get(key, 0)
    for key in ("accepted_per_pos", "tried_per_pos"):
        row[key] = _add_lists(row[key], speculative.metrics[key])


def repeat_speedups(rows: list[dict]) -> list[float]:
    """The pooled speed ratio of `rows` in each repeat on its own (repeat r: every row's r-th pair), so a
    workload's ratio comes with its spread over the repeats: the noise of the machine it ran on."""
    out = []
    for r in range(min(len(row["per_repeat"]) for row in rows)):
        ps, pt, ss, st = (sum(row["per_repeat"][r][i] for row in rows) for i in range(4))
        out.append((st / ss) / (pt / ps) if ps and ss and pt else 0.0)
    return out


def _add_lists(a: list, b: list) -> list:
    """Element-wise sum of two per-depth count lists of any lengths."""
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


def _pooled(rows: list[dict], repeats: int | None = None) -> dict:
    """The counters of several rows added up (speeds are then ratios of sums, not means of ratios), each
    row's scaled to `repeats` pairs if given: a short prompt that ran extra pairs weighs as much as the rest."""
    out = {k: 0 for k in _SUMMED}
    out["accepted_per_pos"], out["tried_per_pos"] = [], []
    for r in rows:
        w = repeats / max(1, len(r["per_repeat"])) if repeats else 1
        for k in _SUMMED:
            out[k] += r[k] * w
        for key in ("accepted_per_pos", "tried_per_pos"):
            out[key] = _add_lists(out[key], [x * w for x in r[key]])
    return out


def _rates(c: dict) -> dict:
    """Speeds, ratio, tau and per-depth acceptance of one row or pooled counters."""
    from eyas.speculative.metrics import acceptance_rates

    plain = c["plain_tokens"] / c["plain_s"] if c["plain_s"] else 0.0
    spec = c["speculative_tokens"] / c["speculative_s"] if c["speculative_s"] else 0.0
    return {
        "plain_tok_s": plain,
        "speculative_tok_s": spec,
        "speedup": spec / plain if plain else 0.0,
        "mean_accepted_length": 1 + c["num_accepted_tokens"] / c["num_drafts"] if c["num_drafts"] else 0.0,
        "acceptance_per_pos": acceptance_rates(c["accepted_per_pos"], c["tried_per_pos"]),
        # the share of the speculative run's tokens that were copies of earlier text (lookup drafts)
        "copied": c["num_lookup_accepted_tokens"] / c["speculative_tokens"] if c["speculative_tokens"] else 0.0,
    }


def _range(each: list[float]) -> str:
    """The lowest to the highest ratio of a single repeat."""
    return f"{min(each):.2f}-{max(each):.2f}x"


def _spread(each: list[float] | None) -> str:
    return f" (repeats {_range(each)})" if each and len(each) > 1 else ""


def _extra_pairs(result: dict) -> str:
    s = result.get("min_seconds") or 0
    return f" (up to {MAX_EXTRA_PAIRS * result['repeats']} under {s:g} s)" if s > 0 else ""


def _depths(rates: list[float], most: int = 6) -> str:
    return " ".join(f"{r:.2f}" for r in rates[:most]) or "-"


def _table(result: dict) -> str:
    lines = [f"{'#':>3} {'workload':<16} {'prompt':>6} {'tokens':>6} {'pairs':>5} {'plain tok/s':>11} {'spec tok/s':>10} "
             f"{'speedup':>7} {'tau':>5} {'copied':>6} {'same':>4}"]
    for r in result["rows"]:
        lines.append(f"{r['prompt']:>3} {r['workload'][:16]:<16} {r['prompt_tokens']:>6} {r['speculative_tokens']:>6} "
                     f"{len(r['per_repeat']):>5} {r['plain_tok_s']:>11.1f} {r['speculative_tok_s']:>10.1f} "
                     f"{r['speedup']:>6.2f}x {r['mean_accepted_length']:>5.2f} {r['copied']:>6.0%} "
                     f"{'yes' if r['identical'] else 'NO':>4}")
    lines.append("")
    lines.append(f"{'workload':<16} {'prompts':>7} {'plain tok/s':>11} {'spec tok/s':>10} {'ratio':>6} "
                 f"{'repeats':>11} {'tau':>5} {'copied':>6} {'worst (#)':>12}  acceptance at depth 1, 2, ...")
    for w, v in result["workloads"].items():
        worst = f"{v['worst_speedup']:.2f}x ({v['worst_prompt']})"
        each = v.get("speedup_per_repeat") or [v["speedup"]]
        spread = _range(each)
        lines.append(f"{w[:16]:<16} {v['prompts']:>7} {v['plain_tok_s']:>11.1f} {v['speculative_tok_s']:>10.1f} "
                     f"{v['speedup']:>5.2f}x {spread:>11} {v['mean_accepted_length']:>5.2f} {v['copied']:>6.0%} "
                     f"{worst:>12}  {_depths(v['acceptance_per_pos'])}")
    t = result["tree"]
    same = "yes" if result["identical"] else "NO"
    lines.append(f"all: plain {result['plain_tok_s']:.1f} tok/s, speculative {result['speculative_tok_s']:.1f} tok/s, "
                 f"ratio {result['speed_ratio']:.2f}x{_spread(result.get('speed_ratio_per_repeat'))}, "
                 f"mean accepted length {result['mean_accepted_length']:.2f}, "
                 f"identical {same} | tree top_k={t['top_k']} depth={t['depth']}{' (adaptive)' if t['adaptive'] else ''}"
                 f"{' + lookup' if t.get('lookup') else ''} "
                 f"total={t['total_tokens']}, repeats {result['repeats']}{_extra_pairs(result)}, "
                 f"threads {result['threads']}, kv {result['kv_dtype']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from eyas.speculative import TreePolicy

    for name in ("max_tokens", "repeats"):
        if getattr(args, name) < 1:
            fail(f"--{name.replace('_', '-')} must be >= 1")
    if not args.min_seconds >= 0:
        fail(f"--min-seconds must be >= 0, got {args.min_seconds}")
    prompts = [p for f in args.prompts for p in read_prompts(f, args.limit)]
    if args.plot:
        from eyas.commands.bench_plot import check_plotting

        check_plotting(args.plot)  # before minutes of benchmarking, not after
    policy = TreePolicy.parse(args.tree) if args.tree else None
    model = load_model(args)
    log = None if args.json else (lambda r: print(f"{r['workload']} prompt {r['prompt']}: {r['speedup']:.2f}x, "
                                                  f"tau {r['mean_accepted_length']:.2f}, {len(r['per_repeat'])} pairs",
                                                  file=sys.stderr))
    result = bench(model, prompts, policy=policy, max_tokens=args.max_tokens, repeats=args.repeats,
                   temperature=args.temperature, seed=args.seed, top_p=args.top_p, top_k=args.top_k,
                   min_seconds=args.min_seconds, log=log)
    result["prompts_files"] = [str(f) for f in args.prompts]
    result["drafter"] = str(args.drafter)
    result["drafter_family"] = args.drafter_family
    if args.plot:
        from eyas.commands.bench_plot import plot

        plot(result, args.plot)
    if args.json:
        print(json.dumps(result))
    else:
        print(_table(result))
        if args.plot:
            print(f"plot: {args.plot}")
    return 0
