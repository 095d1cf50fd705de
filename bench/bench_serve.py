"""Aggregate decode throughput of the serving engine (continuous batching) with 1 and with N
concurrent clients on the same model (greedy unless --temperature), alternating rounds (the first
pair is warm-up).

    PYTHONPATH=build/NAME/pkg python bench/bench_serve.py [--clients 8] [--tokens 64] [--rounds 3]
        [--model GGUF] [--drafter none|default] [--threads 2] [--temperature T --top-p P --seed S]

Prints, per round, tokens/s for one client and for N, and the ratio; then the median ratio. The
engine runs without HTTP (eyas.server.engine), so the figure is the engine's, not the network's.
"""

from __future__ import annotations

import argparse
import queue
import statistics
import time

import eyas
from eyas.sampling import SamplingParams
from eyas.server.engine import Engine, Request

PROMPTS = [
    "Explain how a hash table handles collisions.",
    "Write a short story about a lighthouse keeper.",
    "List the planets of the solar system with one fact each.",
    "What is the difference between a process and a thread?",
    "Describe the water cycle for a ten-year-old.",
    "Give three tips for writing readable Python code.",
    "Why is the sky blue?",
    "Summarise the plot of a heist film in five sentences.",
]


def serve(engine: Engine, model, prompts: list[str], tokens: int, sampling: SamplingParams) -> tuple[int, float]:
    """All prompts submitted at once; (generated tokens, seconds until the last one finished)."""
    done: list[queue.Queue] = [queue.Queue() for _ in prompts]
    t0 = time.perf_counter()
    for q, p in zip(done, prompts):
        req = Request(model.encode_prompt(p, chat=True), sampling, tokens, ignore_eos=True)
        engine.submit(req, lambda kind, payload, q=q: kind != "text" and q.put((kind, payload)))
    total = 0
    for q in done:
        kind, payload = q.get(timeout=600)
        if kind != "done":
            raise RuntimeError(f"request failed: {payload}")
        total += payload["completion_tokens"]
    return total, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default=None)
    ap.add_argument("--drafter", default="none")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    sampling = SamplingParams(temperature=a.temperature, top_p=a.top_p, seed=a.seed)
    model = eyas.load(a.model, drafter=a.drafter, threads=a.threads)
    engine = Engine(model, max_concurrency=a.clients, max_queue=a.clients)
    prompts = (PROMPTS * (a.clients // len(PROMPTS) + 1))[: a.clients]
    ratios = []
    try:
        for r in range(a.rounds + 1):
            n1, s1 = serve(engine, model, prompts[:1], a.tokens, sampling)
            nn, sn = serve(engine, model, prompts, a.tokens, sampling)
            one, many = n1 / s1, nn / sn
            tag = "warm-up" if r == 0 else f"round {r}"
            print(f"{tag}: 1 client {one:.1f} tok/s, {a.clients} clients {many:.1f} tok/s aggregate, "
                  f"ratio {many / one:.2f}x (batches of up to {engine.batcher.widest})", flush=True)
            if r:
                ratios.append(many / one)
    finally:
        engine.shutdown()
    print(f"median ratio {statistics.median(ratios):.2f}x over {len(ratios)} rounds")


if __name__ == "__main__":
    main()
