"""Plain decode and prefill speed of eyas against llama.cpp's `llama-bench` on the same GGUF files,
measured in alternating rounds of one run, so the ratio holds on a shared, noisy machine; with
--verify, eyas's tree-verify cost curve beside it. One table (two with --verify).

    python bench/compare_llamacpp.py --llama-bench path/to/llama-bench [--model FILE ...] [--threads 2]
        [--rounds 3] [--prompt 512] [--verify 2 4 8 16 32 64]

llama-bench's tg128 decodes 128 tokens one at a time from an empty context (its KV cache is F16);
eyas does the same here: one prompt token, then 128 greedy steps with the default (F16) cache.
pp512 (--prompt 512; 0 skips it): one forward over 512 prompt tokens, llama-bench's -p 512 and
eyas's prefill (chunks of 256 rows, logits of the last row only).
Decode is a stream of the weights, so each tg row also gives the roofline measured in the same
round: the machine's read bandwidth (`read_bandwidth`: the engine's probe, the best of 1 and 4
streams per thread, as `bench_bandwidth` prints it; right before and right after the round's two
decode runs, their mean) over the bytes one step reads (`Transformer.weight_bytes`, a hybrid model's
recurrent state, and the KV rows of the average context), and each engine's share of it. On a shared machine the bandwidth moves by
tens of percent within minutes, so a roofline share only means something against its own round.
--verify M ...: after a prompt of --verify-context tokens, eyas's forward of a random tree of M nodes
(logits for every node, as a verify computes them) as a multiple of a decode step at that context,
against the kernels issue's bound 1.15 x max(step, M x the round's pp per-token time); llama.cpp's
column is its own batch of M prompt tokens (llama-bench -p M, from an empty cache, no tree) as a
multiple of its tg step, for scale. Several --model files run one after the other, each with its own
rounds, into the same tables.
llama.cpp is not a dependency of eyas: build it with ../shared/tools/build-llama-peers.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from eyas import _core  # noqa: E402
from eyas.api import DEFAULT_KV_DTYPE, KV_DTYPES  # noqa: E402
from eyas.generation import stream  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.models.default import default_model_path  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_generate import verify_times  # noqa: E402


def llama_prefill_rates(binary: str, model: str, threads: int, repeats: int, prompts: list[int]) -> dict[int, float]:
    """llama-bench's mean tok/s of prefill tests pp<n> for every n in prompts (one run), from its JSON."""
    cmd = [binary, "-m", model, "-t", str(threads), "-p", ",".join(map(str, prompts)), "-n", "0", "-r", str(repeats),
           "-o", "json"]
    rows = run_llama_bench(cmd)
    rates = {int(r["n_prompt"]): float(r["avg_ts"]) for r in rows if r.get("n_gen") == 0}
    missing = [n for n in prompts if n not in rates]
    if missing:
        raise SystemExit(f"llama-bench printed no pp{missing[0]} row")
    return rates


def llama_rate(binary: str, model: str, threads: int, repeats: int, *, gen: int = 0, prompt: int = 0) -> float:
    """llama-bench's mean tok/s of one test: decode (tg<gen>) or prefill (pp<prompt>), from its JSON."""
    cmd = [binary, "-m", model, "-t", str(threads), "-p", str(prompt), "-n", str(gen), "-r", str(repeats), "-o", "json"]
    rows = [r for r in run_llama_bench(cmd) if r.get("n_gen") == gen and r.get("n_prompt") == prompt]
    if not rows:
        raise SystemExit(f"llama-bench printed no {'tg' if gen else 'pp'}{gen or prompt} row")
    return float(rows[0]["avg_ts"])


def run_llama_bench(cmd: list[str]) -> list[dict]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"llama-bench failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout)


def read_bandwidth(buf: np.ndarray, device) -> float:
    """The machine's read GB/s for the decode roofline: the best of 1 and 4 interleaved streams per
    thread of `device` over buf (far larger than any cache), best of 3 passes each (the engine's
    probe, csrc/core/read_bandwidth.h; bench_bandwidth prints the same per thread count). numpy's
    reduce, used before 2026-12-04, read 12-22 % less than this on the same machine."""
    return max(_core.read_bandwidth(buf, streams, 3, device) for streams in (1, 4))


def step_bytes(m, tokens: int) -> float:
    """Bytes a decode step reads on average over a tg run from an empty context: the weights, the
    fixed-size recurrent state of hybrid layers (Gated DeltaNet), and the KV rows of the context (one
    prompt token, then `tokens` steps). State sizes at lengths 1 and 2 tell the two apart."""
    m.reset()
    sizes = []
    for _ in range(2):
        m.forward(np.array([1], np.int32), logits="none")
        m.commit(np.zeros(1, np.int32))
        sizes.append(m.state_bytes)
    m.reset()
    per_token = sizes[1] - sizes[0]
    fixed = sizes[0] - per_token
    return m.weight_bytes + fixed + per_token * (1 + tokens / 2)


def eyas_tg(m, tokens: int, repeats: int) -> float:
    """Median over repeats of greedy decode tok/s for `tokens` steps after a one-token prompt."""
    rates = []
    for _ in range(repeats + 1):  # the first run warms up (weight packs, page faults)
        steps = stream(m, [1], SamplingParams())  # greedy, through the path the API uses
        next(steps)  # the prompt token's forward
        t0 = time.perf_counter()
        for _ in range(tokens):
            next(steps)
        rates.append(tokens / (time.perf_counter() - t0))
        steps.close()
    return statistics.median(rates[1:])


def prompt_ids(n: int) -> np.ndarray:
    """n prompt token ids (int32), the same for every test and model."""
    return (np.arange(n) % 1000 + 100).astype(np.int32)


def eyas_pp(m, prompt: int, repeats: int) -> float:
    """Median over repeats of prefill tok/s: `prompt` tokens in one forward (last row's logits)."""
    ids = prompt_ids(prompt)
    rates = []
    for _ in range(repeats + 1):  # the first run warms up
        m.reset()
        t0 = time.perf_counter()
        m.forward(ids, logits="last")
        rates.append(prompt / (time.perf_counter() - t0))
    return statistics.median(rates[1:])


def eyas_verify_curve(m, sizes: list[int], context: int, repeats: int, rng) -> tuple[float, dict[int, float]]:
    """(median decode step, {M: median forward of a random M-node tree}) in seconds, after a prompt of
    `context` tokens: the steps are greedy and committed (then cut back), the trees never committed."""
    m.reset()
    m.prefill(prompt_ids(context))
    token, steps = np.array([100], np.int32), []
    for _ in range(8 * repeats + 2):  # the first two warm up
        t0 = time.perf_counter()
        token[0] = m.forward(token, logits="argmax")["argmax"]
        m.commit(np.zeros(1, np.int32))
        steps.append(time.perf_counter() - t0)
    m.truncate(context)
    verify = verify_times(m, sizes, rng, repeats)
    m.reset()
    return statistics.median(steps[2:]), verify


def verify_bound(step: float, prefill_per_token: float, nodes: int) -> float:
    """The kernels issue's bound on a verify of `nodes` nodes: 1.15 x max(step, nodes x prefill per token)."""
    return 1.15 * max(step, nodes * prefill_per_token)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-bench", required=True, help="path to llama.cpp's llama-bench binary")
    ap.add_argument("--model", action="append", default=None,
                    help="GGUF file, repeatable (default: SmolLM2-135M-Instruct Q4_1)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5, help="runs per side and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kv-dtype", choices=KV_DTYPES, default=DEFAULT_KV_DTYPE)
    ap.add_argument("--prompt", type=int, default=512, help="prefill test size (pp); 0 = decode only")
    ap.add_argument("--verify", type=int, nargs="*", default=[], metavar="M",
                    help="tree sizes of the verify-cost curve (e.g. 2 4 8 16 32 64); needs --prompt")
    ap.add_argument("--verify-context", type=int, default=128, help="prompt tokens before each verify")
    args = ap.parse_args()
    if not os.access(args.llama_bench, os.X_OK):
        raise SystemExit(f"--llama-bench {args.llama_bench!r} is not an executable file")
    if args.verify and not args.prompt:
        raise SystemExit("--verify needs --prompt (the bound is relative to the prefill's per-token time)")
    if any(n < 1 for n in args.verify):
        raise SystemExit(f"--verify sizes must be at least 1, got {args.verify}")
    print("round | model | test | llama.cpp tok/s | eyas tok/s | eyas / llama.cpp | read GB/s | roofline tok/s "
          "| llama.cpp % roofline | eyas % roofline")
    print("--- | --- | --- | --- | --- | --- | --- | --- | --- | ---")
    curves, notes = [], []
    buf = np.arange((1 << 30) // 8, dtype=np.uint64)  # 1 GiB: the bandwidth probe's cold buffer
    for path in [str(p) for p in (args.model or [default_model_path()])]:
        rows, note = compare_model(path, args, buf)
        curves += rows
        notes.append(note)
    print()
    for note in notes:
        print(note)
    if curves:
        print()
        print("verify: eyas's forward of a random tree of M nodes after "
              f"{args.verify_context} prompt tokens, as a multiple of its decode step there; bound: 1.15 x max(step, "
              "M x the round's pp time per token); llama.cpp: its pp<M> batch from an empty cache over its tg step")
        print("round | model | M | eyas verify ms | eyas x step | bound x step | within | llama.cpp batch x step")
        print("--- | --- | --- | --- | --- | --- | --- | ---")
        for row in curves:
            print(row)


def compare_model(path: str, args, buf) -> tuple[list[str], str]:
    """Prints one model's rows of the speed table; returns its verify rows and a line about the run."""
    model = load_model(path)
    name = model.path.name
    device = _core.Device("cpu", args.threads)
    room = args.verify_context + max(args.verify, default=0) + 8 * args.repeats + 8
    m = _core.Transformer(model.spec, model.weights, max_context=max(args.tokens, args.prompt, room) + 8,
                          device=device, kv_dtype=args.kv_dtype)
    simd = _core.ops._simd_levels()[-1]
    per_step = step_bytes(m, args.tokens)
    note = (f"{name}: threads={args.threads}  eyas kv={args.kv_dtype}  eyas matmul {_core.ops.get_isa()}, other "
            f"kernels {simd}  {args.repeats} runs per side and round; a decode step reads {per_step / 1e6:.1f} MB "
            f"(weights {m.weight_bytes / 1e6:.1f} MB + recurrent state + average KV)")
    rng = np.random.default_rng(0)
    curves = []
    for r in range(args.rounds):
        # The side that runs second in a round runs right after the other's process, so the order
        # alternates by round: neither engine always meets the machine as the other left it.
        bw0 = read_bandwidth(buf, device)
        if r % 2 == 0:
            ll_tg = llama_rate(args.llama_bench, path, args.threads, args.repeats, gen=args.tokens)
            ey = eyas_tg(m, args.tokens, args.repeats)
        else:
            ey = eyas_tg(m, args.tokens, args.repeats)
            ll_tg = llama_rate(args.llama_bench, path, args.threads, args.repeats, gen=args.tokens)
        bw = (bw0 + read_bandwidth(buf, device)) / 2
        roof = bw * 1e9 / per_step
        print(f"{r + 1} | {name} | tg{args.tokens} | {ll_tg:.1f} | {ey:.1f} | {ey / ll_tg:.2f}x | {bw:.1f} | {roof:.1f} "
              f"| {100 * ll_tg / roof:.0f} % | {100 * ey / roof:.0f} %", flush=True)
        if not args.prompt:
            continue
        ll = llama_rate(args.llama_bench, path, args.threads, args.repeats, prompt=args.prompt)
        ey_pp = eyas_pp(m, args.prompt, args.repeats)
        print(f"{r + 1} | {name} | pp{args.prompt} | {ll:.1f} | {ey_pp:.1f} | {ey_pp / ll:.2f}x | | | |", flush=True)
        if not args.verify:
            continue
        ll_batch = llama_prefill_rates(args.llama_bench, path, args.threads, args.repeats, args.verify)
        step, verify = eyas_verify_curve(m, args.verify, args.verify_context, args.repeats, rng)
        for n in args.verify:
            bound = verify_bound(step, 1 / ey_pp, n)
            curves.append(f"{r + 1} | {name} | {n} | {verify[n] * 1e3:.2f} | {verify[n] / step:.2f} | {bound / step:.2f} "
                          f"| {'yes' if verify[n] <= bound else 'no'} | {(n / ll_batch[n]) * ll_tg:.2f}")
    return curves, note


if __name__ == "__main__":
    main()
