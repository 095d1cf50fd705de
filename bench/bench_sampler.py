"""The cost of one sampled draw (`_core.speculative.sample`, the sampler plain and speculative decoding
share) over real logit rows of a model, per filter set, and plain decoding's tokens/s greedy against
sampled in the same process.

    PYTHONPATH=build/dev/pkg python bench/bench_sampler.py [--model FILE] [--rows 64] [--passes 20]

The rows are the logits of a greedy reply to a chat request (the vocabulary a real step hands the
sampler); each filter set is timed over every row, `--passes` times, and the median pass is reported.
"""

import argparse
import json
import time

import numpy as np

FILTERS = [
    ("greedy", dict(temperature=0.0)),
    ("T 0.7", dict(temperature=0.7)),
    ("T 0.7, top-p 0.9", dict(temperature=0.7, top_p=0.9)),
    ("T 1.0, top-p 0.9", dict(temperature=1.0, top_p=0.9)),
    ("T 0.7, top-k 40, top-p 0.9", dict(temperature=0.7, top_k=40, top_p=0.9)),
]


def logit_rows(model, n: int) -> np.ndarray:
    """F32[n, V]: the logits of n greedy steps after a chat request."""
    t = model.transformer
    ids = np.asarray(model.encode_prompt("Write a persuasive paragraph about lighthouses.", chat=True), np.int32)
    t.reset()
    out = t.prefill(ids, logits="last")
    rows = []
    for _ in range(n):
        row = out["logits"][-1].copy()
        rows.append(row)
        out = t.decode(int(np.argmax(row)), logits="last")
    return np.stack(rows)


def draw_cost_us(rows: np.ndarray, passes: int, **filters) -> float:
    from eyas import _core

    sample, rng = _core.speculative.sample, _core.speculative.Rng(1)
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        for row in rows:
            sample(row, rng=rng, **filters)
        times.append((time.perf_counter() - t0) / len(rows))
    return 1e6 * float(np.median(times))


def decode_tok_s(model, sampling, prompts: list[str], max_tokens: int) -> float:
    from eyas import generation

    seconds = tokens = 0
    for prompt in prompts:
        ids = model.encode_prompt(prompt, chat=True)
        steps = generation.stream(model.transformer, ids, sampling)
        g = generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=max_tokens,
                                  ignore_eos=True).consume()
        seconds += g.metrics["decode_s"]
        tokens += len(g.tokens) - 1
    return tokens / seconds


def main() -> None:
    import eyas
    from eyas.sampling import SamplingParams

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="GGUF file (default: the bundled model)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--prompts", default="bench/prompts/eval_chat.jsonl", help="JSONL of chat requests for decoding")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()

    model = eyas.load(args.model, drafter="none", threads=args.threads) if args.model else \
        eyas.load(drafter="none", threads=args.threads)
    rows = logit_rows(model, args.rows)
    print(f"one draw over {rows.shape[1]:,}-token rows, median of {args.passes} passes over {len(rows)} rows:")
    for name, filters in FILTERS:
        print(f"  {name:28s} {draw_cost_us(rows, args.passes, **filters):8.1f} us")
    with open(args.prompts) as f:
        prompts = [json.loads(line)["prompt"] for line in f][: args.limit]
    decode_tok_s(model, SamplingParams(temperature=0.0), prompts[:1], 16)  # warm-up
    greedy = decode_tok_s(model, SamplingParams(temperature=0.0), prompts, args.max_tokens)
    sampled = decode_tok_s(model, SamplingParams(temperature=0.7, top_p=0.9, seed=1), prompts, args.max_tokens)
    print(f"plain decoding, {len(prompts)} prompts x {args.max_tokens} tokens: greedy {greedy:.1f} tok/s, "
          f"T 0.7 top-p 0.9 {sampled:.1f} tok/s ({sampled / greedy:.2f}x)")


if __name__ == "__main__":
    main()
