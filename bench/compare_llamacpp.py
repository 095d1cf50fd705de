"""Plain decode and prefill speed of eyas against llama.cpp's `llama-bench` on the same GGUF file,
measured in alternating rounds of one run, so the ratio holds on a shared, noisy machine. One table.

    python bench/compare_llamacpp.py --llama-bench path/to/llama-bench [--threads 2] [--rounds 3]
        [--prompt 512]

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
import time  # noqa: E402

import numpy as np  # noqa: E402

from eyas import _core  # noqa: E402
from eyas.api import DEFAULT_KV_DTYPE, KV_DTYPES  # noqa: E402
from eyas.generation import stream  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.models.default import default_model_path  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402


def llama_rate(binary: str, model: str, threads: int, repeats: int, *, gen: int = 0, prompt: int = 0) -> float:
    """llama-bench's mean tok/s of one test: decode (tg<gen>) or prefill (pp<prompt>), from its JSON."""
    cmd = [binary, "-m", model, "-t", str(threads), "-p", str(prompt), "-n", str(gen), "-r", str(repeats), "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"llama-bench failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    rows = [r for r in json.loads(out.stdout) if r.get("n_gen") == gen and r.get("n_prompt") == prompt]
    if not rows:
        raise SystemExit(f"llama-bench printed no {'tg' if gen else 'pp'}{gen or prompt} row")
    return float(rows[0]["avg_ts"])


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


def eyas_pp(m, prompt: int, repeats: int) -> float:
    """Median over repeats of prefill tok/s: `prompt` tokens in one forward (last row's logits)."""
    ids = (np.arange(prompt) % 1000 + 100).astype(np.int32)
    rates = []
    for _ in range(repeats + 1):  # the first run warms up
        m.reset()
        t0 = time.perf_counter()
        m.forward(ids, logits="last")
        rates.append(prompt / (time.perf_counter() - t0))
    return statistics.median(rates[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-bench", required=True, help="path to llama.cpp's llama-bench binary")
    ap.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M-Instruct Q4_1)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5, help="runs per side and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kv-dtype", choices=KV_DTYPES, default=DEFAULT_KV_DTYPE)
    ap.add_argument("--prompt", type=int, default=512, help="prefill test size (pp); 0 = decode only")
    args = ap.parse_args()
    if not os.access(args.llama_bench, os.X_OK):
        raise SystemExit(f"--llama-bench {args.llama_bench!r} is not an executable file")
    path = str(args.model or default_model_path())
    model = load_model(path)
    device = _core.Device("cpu", args.threads)
    m = _core.Transformer(model.spec, model.weights, max_context=max(args.tokens, args.prompt) + 8,
                          device=device, kv_dtype=args.kv_dtype)
    simd = _core.ops._simd_levels()[-1]
    print(f"model: {model.path.name}  threads={args.threads}  eyas kv={args.kv_dtype}  eyas matmul "
          f"{_core.ops.get_isa()}, other kernels {simd}  {args.repeats} runs per side and round")
    buf = np.arange((1 << 30) // 8, dtype=np.uint64)  # 1 GiB: the bandwidth probe's cold buffer
    per_step = step_bytes(m, args.tokens)
    print(f"a decode step reads {per_step / 1e6:.1f} MB (weights {m.weight_bytes / 1e6:.1f} MB + recurrent state + average KV)")
    print("round | test | llama.cpp tok/s | eyas tok/s | eyas / llama.cpp | read GB/s | roofline tok/s "
          "| llama.cpp % roofline | eyas % roofline")
    print("--- | --- | --- | --- | --- | --- | --- | --- | ---")
    for r in range(args.rounds):
        bw0 = read_bandwidth(buf, device)
        ll = llama_rate(args.llama_bench, path, args.threads, args.repeats, gen=args.tokens)
        ey = eyas_tg(m, args.tokens, args.repeats)
        bw = (bw0 + read_bandwidth(buf, device)) / 2
        roof = bw * 1e9 / per_step
        print(f"{r + 1} | tg{args.tokens} | {ll:.1f} | {ey:.1f} | {ey / ll:.2f}x | {bw:.1f} | {roof:.1f} "
              f"| {100 * ll / roof:.0f} % | {100 * ey / roof:.0f} %", flush=True)
        if args.prompt:
            ll = llama_rate(args.llama_bench, path, args.threads, args.repeats, prompt=args.prompt)
            ey = eyas_pp(m, args.prompt, args.repeats)
            print(f"{r + 1} | pp{args.prompt} | {ll:.1f} | {ey:.1f} | {ey / ll:.2f}x | | | |", flush=True)


if __name__ == "__main__":
    main()
