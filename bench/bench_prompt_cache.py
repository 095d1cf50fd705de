"""Time to first token of a multi-turn follow-up served from the prompt cache, against the same
request served cold, through the serving engine (eyas.server.engine), alternating rounds (the
first pair is warm-up).

    PYTHONPATH=build/NAME/pkg python bench/bench_prompt_cache.py [--rounds 3] [--reply-tokens 64]
        [--model GGUF] [--drafter none|default] [--threads 2]

The conversation is a real document with a request (the first prompt of
bench/fixtures/e7_doc_summary.jsonl), the model's reply, then a short follow-up question. Cached:
the follow-up goes to the slot that just served the first turn. Cold: the same follow-up on a
slot that last served an unrelated prompt, so it prefills everything. Prints both times and
their ratio per round, then the median ratio (issue target: <= 20%).
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import time
from pathlib import Path

import eyas
from eyas.sampling import SamplingParams
from eyas.server.engine import Engine, Request

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "e7_doc_summary.jsonl"
FOLLOW_UP = "Thanks. Which of those points matters most for a beginner, and why?"
UNRELATED = "Write a haiku about autumn."


def run(engine: Engine, ids: list[int], tokens: int) -> tuple[float, dict]:
    """(seconds to the first streamed text, the done payload) of one request."""
    events: queue.Queue = queue.Queue()
    t0 = time.perf_counter()
    first: list[float] = []

    def on_event(kind, payload):
        if kind == "text" and not first:
            first.append(time.perf_counter() - t0)
        if kind != "text":
            events.put((kind, payload))

    engine.submit(Request(ids, SamplingParams(), tokens, ignore_eos=True), on_event)
    kind, payload = events.get(timeout=600)
    if kind != "done":
        raise RuntimeError(f"request failed: {payload}")
    return first[0], payload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reply-tokens", type=int, default=64)
    ap.add_argument("--model", default=None)
    ap.add_argument("--drafter", default="none")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    model = eyas.load(a.model, drafter=a.drafter, threads=a.threads)
    engine = Engine(model, max_concurrency=1, max_queue=1)  # one slot: what it served last is what it holds
    doc = json.loads(FIXTURE.read_text().splitlines()[0])["prompt"]
    turn1 = [{"role": "user", "content": doc}]
    ratios = []
    try:
        _, done = run(engine, model.encode_prompt(turn1, chat=True), a.reply_tokens)
        history = turn1 + [{"role": "assistant", "content": done["text"]}, {"role": "user", "content": FOLLOW_UP}]
        follow_ids = model.encode_prompt(history, chat=True)
        for r in range(a.rounds + 1):
            run(engine, model.encode_prompt(turn1, chat=True), a.reply_tokens)  # the slot holds turn 1
            warm, d_warm = run(engine, follow_ids, 1)
            run(engine, model.encode_prompt(UNRELATED, chat=True), 4)  # the slot holds something else
            cold, d_cold = run(engine, follow_ids, 1)
            tag = "warm-up" if r == 0 else f"round {r}"
            print(f"{tag}: follow-up of {len(follow_ids)} prompt tokens: cached {warm * 1000:.0f} ms "
                  f"({d_warm['cached_tokens']} tokens reused), cold {cold * 1000:.0f} ms "
                  f"({d_cold['cached_tokens']} reused): {warm / cold:.1%}", flush=True)
            if r:
                ratios.append(warm / cold)
    finally:
        engine.shutdown()
    print(f"median cached / cold time to first token: {statistics.median(ratios):.1%} over {len(ratios)} rounds")


if __name__ == "__main__":
    main()
