"""Speed of the torch target that drafter training runs (eyas.train.target), on a GPU, at a real shape.

Generation of training data and the target's forward in every training step use its attention; this
times them with random weights at the shape of a real model (speed does not depend on weight values),
as shipped (decode steps replayed as a CUDA graph, grouped query rows in attention) and, for comparison,
as before 2026-12-06 (eager decode steps, SDPA's GQA option over an explicit mask).

    # here, once: the shape of the default model (or --model FILE) -> a small JSON
    python scripts/device/target_speed.py --write-spec scripts/device/smollm2-135m.spec.json
    # on the device (torch with CUDA; no gguf, no compiled core needed)
    python scripts/device/target_speed.py --spec scripts/device/smollm2-135m.spec.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
try:  # the training code and the loaders never need the compiled core (as in run_train.py)
    import eyas._core  # noqa: F401
except ImportError:
    sys.modules["eyas._core"] = types.ModuleType("eyas._core")


def write_spec(path: str, model: str | None) -> None:
    from eyas.loaders import load_model
    from eyas.models.default import default_model_path

    lm = load_model(model or default_model_path())
    spec = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in lm.spec.items()}
    shapes = {name: [int(x) for x in entry[2]] for name, entry in lm.weights.items()}
    with open(path, "w") as f:
        json.dump({"spec": spec, "shapes": shapes, "eos_ids": list(lm.tokenizer.eos_ids),
                   "rope_theta": float(lm.rope_theta)}, f)
    print(f"wrote {path}: {len(shapes)} weights")


def build_target(path: str, device):
    import torch

    from eyas.train.target import TorchTarget

    d = json.load(open(path))
    spec = dict(d["spec"], rope_inv_freq=np.asarray(d["spec"]["rope_inv_freq"], np.float32))
    rng = np.random.default_rng(0)
    weights = {}
    for name, shape in d["shapes"].items():  # F32 entries (type 0), scaled as a trained model's roughly are
        w = (rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[-1])).astype(np.float32)
        weights[name] = (np.ones(shape, np.float32) if name.endswith("norm") else w, 0, shape)
    # What load_model returns, as far as TorchTarget.from_loaded reads it.
    loaded = types.SimpleNamespace(spec=spec, weights=weights, rope_theta=d["rope_theta"],
                                   tokenizer=types.SimpleNamespace(eos_ids=d["eos_ids"]))
    with torch.no_grad():
        return TorchTarget.from_loaded(loaded).to(device).eval()


def use_gqa_sdpa(module) -> None:
    """The attention before 2026-12-06 in `module` (eyas.train.target): SDPA with enable_gqa over the
    explicit [B, 1, T, S] mask, also for the causal-only training forward."""
    import torch
    import torch.nn.functional as F

    def sdpa(q, k, v, attn_mask=None, is_causal=False, enable_gqa=False):
        if is_causal:
            T = q.shape[2]
            attn_mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()[None, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, enable_gqa=enable_gqa)

    module.F = types.SimpleNamespace(**{n: getattr(F, n) for n in dir(F) if not n.startswith("_")})
    module.F.scaled_dot_product_attention = sdpa
    module.group_mask = lambda mask, group: mask
    module.grouped_attention = lambda q, k, v, mask: sdpa(q, k, v, attn_mask=mask, enable_gqa=q.shape[1] != k.shape[1])


def use_matmul_attention(module) -> None:
    """A candidate for decode steps: grouped query rows through two batched matmuls and a float32 softmax."""
    import torch

    def attend(q, k, v, mask):
        B, Hq, T, D = q.shape
        qg = q.reshape(B, k.shape[1], Hq // k.shape[1] * T, D)
        s = torch.matmul(qg, k.transpose(-1, -2)).float() * D ** -0.5
        p = torch.softmax(s.masked_fill(~mask, float("-inf")), -1).to(v.dtype)
        return torch.matmul(p, v).reshape(B, Hq, T, D)

    module.grouped_attention = attend


def bench(target, device, args, static: bool) -> dict:
    import torch

    from eyas.train.generate import generate_batch

    rng = np.random.default_rng(1)
    V = target.cfg.vocab_size
    out = {}
    for name, (n, lo, hi, new) in {"long prompts": (args.batch, 1000, 2000, args.new),
                                   "short prompts": (args.batch, 30, 80, 2 * args.new)}.items():
        prompts = [list(rng.integers(3, V, size=int(rng.integers(lo, hi)))) for _ in range(n)]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            generate_batch(target, prompts[:8], 4, [0.7] * 8, dtype=torch.bfloat16, static=static)  # warm-up
            torch.cuda.synchronize()
            t0 = time.time()
            res = generate_batch(target, prompts, new, [0.0 if i % 2 else 0.7 for i in range(n)], dtype=torch.bfloat16,
                                 static=static)
            torch.cuda.synchronize()
        dt = time.time() - t0
        tokens = sum(len(r) for r in res)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            t1 = time.time()
            generate_batch(target, prompts, 1, dtype=torch.bfloat16, static=static)  # the prefill alone
            torch.cuda.synchronize()
        prefill = time.time() - t1
        out[name] = (f"{tokens / dt:,.0f} generated tok/s ({n} x {lo}-{hi} prompt tokens, {tokens} generated in "
                     f"{dt:.2f} s, of which the prefill {prefill:.2f} s)")
    ids = torch.as_tensor(rng.integers(3, V, size=(args.train_rows, args.train_len)), device=device)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        target(ids[:1, :64])
        torch.cuda.synchronize()
        t0 = time.time()
        for _ in range(args.reps):
            target(ids, want_aux=True)
        torch.cuda.synchronize()
    dt = (time.time() - t0) / args.reps
    out["training forward"] = f"{args.train_rows * args.train_len / dt:,.0f} tok/s ({args.train_rows} x {args.train_len})"
    return out


def same_tokens(target, n: int = 64, new: int = 64) -> str:
    """The share of greedy tokens the graph-replayed steps draw as the eager steps do (bf16: the two
    attend over different cache lengths, so near-ties may fall the other way)."""
    import torch

    from eyas.train.generate import generate_batch

    rng = np.random.default_rng(2)
    prompts = [list(rng.integers(3, target.cfg.vocab_size, size=int(rng.integers(20, 400)))) for _ in range(n)]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        a, b = (generate_batch(target, prompts, new, dtype=torch.bfloat16, static=s) for s in (False, True))
    rows = sum(x == y for x, y in zip(a, b))
    first = [next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y))) for x, y in zip(a, b)]
    return f"{rows} of {n} rows whole; tokens before the first difference {sum(first)} of {sum(len(x) for x in a)}"


def training_step_parts(target, device, amp_dtype: str, reps: int = 4) -> None:
    """Time one EAGLE-3 training step's parts on random data: the target's signals (forward, soft labels)
    and the drafter's 7-step unroll with its backward, for long and short sequences, with the unroll's
    attention as shipped and as before 2026-12-06, in two alternating rounds."""
    import torch

    from eyas.train.drafter import DrafterConfig, Eagle3Drafter
    from eyas.train.trainer import TrainArgs, target_signals, ttt_loss

    c = target.cfg
    cfg = DrafterConfig(vocab_size=c.vocab_size, draft_vocab_size=8192, hidden_size=c.hidden_size,
                        intermediate_size=c.intermediate_size, num_heads=c.num_heads, num_kv_heads=c.num_kv_heads,
                        head_dim=c.head_dim, target_hidden_size=c.hidden_size, rope_theta=c.rope_theta,
                        aux_layers=c.aux_layers)
    drafter = Eagle3Drafter(cfg, target.embed).to(device)
    drafter.set_vocab(torch.arange(8192, device=device))
    import eyas.train.drafter as drafter_module

    shipped = drafter_module.unrolled_attention

    rng = np.random.default_rng(3)
    shapes = ((10, 2448), (80, 300))
    batches = {s: torch.as_tensor(rng.integers(3, c.vocab_size, size=s), device=device) for s in shapes}
    for (rows, length), label in [(s, label) for _ in range(2) for s in shapes for label in ("shipped", "before")]:
        reference = drafter_module.unrolled_attention_reference  # the unroll's attention before 2026-12-06
        drafter_module.unrolled_attention = shipped if label == "shipped" else reference
        ids = batches[(rows, length)]  # the same batch and weights for both: their losses compare
        lm = torch.ones_like(ids, dtype=torch.bool)
        times = {"signals": 0.0, "unroll": 0.0, "backward": 0.0}
        for r in range(reps + 1):
            with torch.autocast("cuda", dtype=getattr(torch, amp_dtype)):
                torch.cuda.synchronize(); t0 = time.time()
                aux, p, mask = target_signals(target, drafter, ids, lm)
                torch.cuda.synchronize(); t1 = time.time()
                loss, _, _ = ttt_loss(drafter, aux, ids, p, mask, TrainArgs())
                torch.cuda.synchronize(); t2 = time.time()
            loss.backward()
            torch.cuda.synchronize(); t3 = time.time()
            drafter.zero_grad(set_to_none=True)
            if r:  # the first is a warm-up
                for k, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2)):
                    times[k] += dt / reps
        parts = ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in times.items())
        print(f"training step ({label}, {amp_dtype}), {rows} x {length} tokens: {parts}; loss {float(loss):.6f}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-spec", help="write the shape JSON of --model (default: the bundled model) and exit")
    ap.add_argument("--model")
    ap.add_argument("--spec", help="the shape JSON to time")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--new", type=int, default=64, help="tokens generated per long prompt (twice as many per short)")
    ap.add_argument("--train-rows", type=int, default=10)
    ap.add_argument("--train-len", type=int, default=2560)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of the variants")
    ap.add_argument("--training-step", action="store_true", help="time a training step's parts and exit")
    ap.add_argument("--amp-dtype", default="bfloat16", choices=("bfloat16", "float16"),
                    help="autocast type of --training-step (the stage scripts train with float16)")
    ap.add_argument("--variants", default="shipped,before", help="shipped, before, matmul (decode attention by matmuls)")
    a = ap.parse_args()
    if a.write_spec:
        return write_spec(a.write_spec, a.model)
    import torch

    import eyas.train.target as target_module

    device = torch.device("cuda")
    target = build_target(a.spec, device)
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    shipped = {k: getattr(target_module, k) for k in ("F", "group_mask", "grouped_attention")}
    if a.training_step:
        return training_step_parts(target, device, a.amp_dtype)
    print("greedy tokens equal to eager decode steps:", same_tokens(target), flush=True)
    # "before": eager decode steps and SDPA's GQA option (the code before 2026-12-06); "shipped": graphs, grouped rows
    for r in range(a.rounds):
        for label in a.variants.split(","):
            for k, v in shipped.items():
                setattr(target_module, k, v)
            if label == "before":
                use_gqa_sdpa(target_module)
            if label == "matmul":
                use_matmul_attention(target_module)
            for k, v in bench(target, device, a, static=label != "before").items():
                print(f"round {r + 1} {label:8s} {k}: {v}", flush=True)


if __name__ == "__main__":
    main()
