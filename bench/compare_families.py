"""Every drafter family against plain decoding on the same prompts, in one run (E9.5).

Per prompt and repeat, plain decoding and each family generate back to back, the order rotating
one place per repeat (warm-up excluded), so every family is paired with the same plain runs.
One table per workload: decode speed, ratio to plain, tau, per-depth acceptance, worst prompt.

    PYTHONPATH=build/NAME/pkg python bench/compare_families.py --prompts bench/fixtures/e7_*.jsonl \
        --family eagle3 --family hydra=PATH --family auto --limit 4 --repeats 3 [--json OUT.json]

--family NAME uses the family's bundled drafter ("default"); NAME=PATH a checkpoint folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS threads would spin beside eyas's

import eyas  # noqa: E402
from eyas.api import drafter_families  # noqa: E402
from eyas.commands.bench import _pooled, _rates, _run, add_pair, new_row, read_prompts  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402


def parse_family(text: str) -> tuple[str, str]:
    name, _, path = text.partition("=")
    if name not in drafter_families() or name == "none":
        raise SystemExit(f"[compare_families] unknown family {name!r}; choose from "
                         f"{', '.join(f for f in drafter_families() if f != 'none')}")
    return name, path or "default"


def compare(models: dict, plain_model, prompts: list[dict], *, repeats: int, max_tokens: int, log=print) -> dict:
    """models: {family label: eyas Model}. Returns {label: {workload: summary}} and the per-prompt rows."""
    sampling = SamplingParams()  # greedy: outputs must match plain bit for bit
    labels = list(models)
    encoded = [plain_model.encode_prompt(p["prompt"], chat=p["chat"]) for p in prompts]
    _run(plain_model, encoded[0], sampling, 16)
    for m in models.values():  # warm-up
        _run(m, encoded[0], sampling, 16, m.proposer)
    rows = {lab: [] for lab in labels}
    for i, (item, ids) in enumerate(zip(prompts, encoded)):
        n = item.get("max_tokens") or max_tokens
        cur = {lab: new_row(i, item["workload"], len(ids)) for lab in labels}
        for r in range(repeats):
            order = ["plain"] + labels
            order = order[r % len(order):] + order[:r % len(order)]
            out = {}
            for name in order:
                if name == "plain":
                    out[name] = _run(plain_model, ids, sampling, n)
                else:
                    out[name] = _run(models[name], ids, sampling, n, models[name].proposer)
            for lab in labels:
                add_pair(cur[lab], out["plain"], out[lab])
        for lab in labels:
            cur[lab].update(_rates(cur[lab]))
            rows[lab].append(cur[lab])
        log(f"prompt {i} ({item['workload']}): " + ", ".join(
            f"{lab} {cur[lab]['speedup']:.2f}x tau {cur[lab]['mean_accepted_length']:.2f}" for lab in labels))
    summary = {}
    for lab in labels:
        summary[lab] = {}
        for w in list(dict.fromkeys(r["workload"] for r in rows[lab])) + ["all"]:
            mine = [r for r in rows[lab] if w in ("all", r["workload"])]
            worst = min(mine, key=lambda r: r["speedup"])
            summary[lab][w] = {**_rates(_pooled(mine)), "prompts": len(mine), "worst_speedup": worst["speedup"],
                               "worst_prompt": worst["prompt"], "identical": all(r["identical"] for r in mine)}
    return {"summary": summary, "rows": rows}


def markdown(summary: dict) -> str:
    """One table: workload x family."""
    lines = ["| workload | family | plain tok/s | spec tok/s | ratio | worst prompt | tau | acceptance at depth 1, 2, 3, 4 "
             "| identical |", "|---|---|---|---|---|---|---|---|---|"]
    labels = list(summary)
    for w in summary[labels[0]]:
        for lab in labels:
            v = summary[lab][w]
            acc = " / ".join(f"{a:.2f}" for a in v["acceptance_per_pos"][:4]) or "-"
            lines.append(f"| {w} | {lab} | {v['plain_tok_s']:.1f} | {v['speculative_tok_s']:.1f} | {v['speedup']:.2f}x "
                         f"| {v['worst_speedup']:.2f}x | {v['mean_accepted_length']:.2f} | {acc} "
                         f"| {'yes' if v['identical'] else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", nargs="+", required=True, help="jsonl prompt files (as `eyas bench`)")
    ap.add_argument("--family", action="append", required=True, metavar="NAME[=PATH]",
                    help="a drafter family to compare (repeat the flag); =PATH: its checkpoint folder")
    ap.add_argument("--model", default=None, help="GGUF file (default: the bundled SmolLM2-135M)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--limit", type=int, default=None, help="first N prompts of each file")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None, metavar="OUT.json", help="also write the summary and rows here")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.max_tokens < 1:
        raise SystemExit("[compare_families] --repeats and --max-tokens must be >= 1")
    prompts = [p for f in args.prompts for p in read_prompts(f, args.limit)]
    plain_model = eyas.load(args.model, drafter="none", drafter_family="none", threads=args.threads)
    models = {}
    for text in args.family:
        name, path = parse_family(text)
        label = name if path == "default" else f"{name}={os.path.basename(os.path.normpath(path))}"
        drafter = path
        if name in ("auto", "parallel") and path != "default":
            raise SystemExit("[compare_families] auto/parallel take their families' bundled drafters")
        models[label] = eyas.load(args.model, drafter=drafter, drafter_family=name, threads=args.threads)
        if models[label].proposer is None:
            raise SystemExit(f"[compare_families] {label}: no drafter (nothing bundled for this family?)")
    result = compare(models, plain_model, prompts, repeats=args.repeats, max_tokens=args.max_tokens,
                     log=lambda s: print(s, file=sys.stderr))
    print(markdown(result["summary"]))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({**result, "families": args.family, "prompts": args.prompts, "limit": args.limit,
                       "repeats": args.repeats, "max_tokens": args.max_tokens}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
