"""`eyas train-drafter` subcommands: prompts, self-prompts, generate, train, transplant, eval, pack (also `python -m eyas.train`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _log(msg, path=None):
    """Prints msg; with `path` also appends it to that JSONL log (a text message as {"message": msg})."""
    print(msg, flush=True)
    if path:
        with open(path, "a") as f:
            f.write((msg if msg.startswith("{") else json.dumps({"message": msg})) + "\n")


def _device(name):
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def _load_target(path, device):
    """-> (torch target on `device`, its tokenizer, its chat template) from a GGUF file or HF folder."""
    from eyas.loaders import load_model

    from .target import TorchTarget

    t0 = time.time()
    lm = load_model(path)
    m = TorchTarget.from_loaded(lm).to(device).eval()
    _log(f"[train] target loaded in {time.time() - t0:.1f}s: {m.cfg}")
    return m, lm.tokenizer, lm.chat_template


def cmd_prompts(a):
    from .prompts import build_prompt_sets, build_real_prompt_set

    if a.source == "real":
        build_real_prompt_set(a.out, n=a.n_real, seed=a.seed, sources=a.real_sources.split(","), sdist_dir=a.sdist_dir)
    else:
        build_prompt_sets(a.out, n_chat=a.n_chat, n_code=a.n_code, n_eval=a.n_eval, seed=a.seed)


def cmd_self_prompts(a):
    """The target writes chat requests (eyas.train.selfprompts) -> a prompt file for `generate`."""
    from .selfprompts import self_prompts

    dev = _device(a.device)
    target, tok, template = _load_target(a.gguf, dev)
    if template is None:
        raise ValueError("[train] self-prompts needs a chat template (the target has none)")
    rows = self_prompts(target, tok, template, a.n, batch=a.batch, max_new=a.max_new, temperature=a.temperature,
                        top_p=a.top_p, seed=a.seed, max_rounds=a.max_rounds, max_minutes=a.max_minutes,
                        log=lambda m: _log(m, a.log))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    _log(f"[train] wrote {len(rows)} self-written requests -> {a.out}", a.log)
    for r in rows[: a.show]:  # a sample in the log, which comes back from a device run when the file may not
        _log(json.dumps({"self_prompt": r["prompt"]}, ensure_ascii=False), a.log)


def _tokenize_prompts(tok, template, rows, max_prompt):
    """Rows with "chat" (default true) go through the chat template; the others are raw text to
    continue, tokenized as the engine's `encode_prompt(chat=False)` does."""
    if template is None and any(r.get("chat", True) for r in rows):
        raise ValueError("[train] the target has no chat template to render the prompts with")
    out = []
    for r in rows:
        ids = template.encode(tok, r["prompt"]) if r.get("chat", True) else tok.encode(r["prompt"])
        if len(ids) <= max_prompt:
            out.append((ids, r))
    return out


def generate_responses(target, prompts, max_new, batch, temps, device, seed=0, desc="generate", fp32=False, max_minutes=0.0):
    """prompts: list of id lists; temps: per-prompt temperature -> list of response id lists.

    Batches group prompts of similar length and run in random order, so a time budget
    (max_minutes > 0: no new batch starts after it) drops an unbiased subset (None entries).
    """
    import random

    import torch
    from tqdm import tqdm

    from .generate import generate_batch

    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    starts = list(range(0, len(order), batch))
    if max_minutes > 0:
        random.Random(seed).shuffle(starts)
    res = [None] * len(prompts)
    amp = device.type == "cuda" and not fp32
    kv_dtype = torch.bfloat16 if amp else torch.float32
    t0 = time.time()
    for s in tqdm(starts, desc=desc, mininterval=5):
        if max_minutes > 0 and time.time() - t0 > 60 * max_minutes:
            _log(f"[train] generation time budget reached; {sum(r is not None for r in res)} of {len(res)} done")
            break
        rows = order[s:s + batch]
        pending = [rows]
        while pending:  # a batch that runs out of GPU memory is retried in halves
            part = pending.pop()
            try:
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                    outs = generate_batch(target, [prompts[i] for i in part], max_new, [temps[i] for i in part],
                                          seed=seed + s + len(pending), dtype=kv_dtype)
            except torch.cuda.OutOfMemoryError:
                if len(part) == 1:
                    raise
                torch.cuda.empty_cache()
                _log(f"[train] out of GPU memory at batch {len(part)}; retrying in halves")
                pending += [part[: len(part) // 2], part[len(part) // 2:]]
                continue
            for i, o in zip(part, outs):
                res[i] = o
    return res


def cmd_generate(a):
    import numpy as np

    from .dataset import Sequences
    from .prompts import read_jsonl

    dev = _device(a.device)
    target, tok, template = _load_target(a.gguf, dev)
    rows = read_jsonl(a.prompts)[: a.limit or None]
    items = _tokenize_prompts(tok, template, rows, a.max_prompt)
    rng = np.random.default_rng(a.seed)
    temps = [0.0 if rng.random() < a.greedy_frac else a.temperature for _ in items]
    t0 = time.time()
    resp = generate_responses(target, [i for i, _ in items], a.max_new, a.batch, temps, dev, a.seed, max_minutes=a.max_minutes)
    keep = [j for j, r in enumerate(resp) if r is not None]
    items, resp, temps = [items[j] for j in keep], [resp[j] for j in keep], [temps[j] for j in keep]
    data = Sequences.from_lists([i for i, _ in items], resp, temps, [1 if r["kind"] == "code" else 0 for _, r in items])
    data.save(a.out)
    n_resp = int(sum(len(r) for r in resp))
    _log(f"[train] generated {len(resp)} responses, {n_resp} tokens ({n_resp / max(len(resp), 1):.0f}/resp) "
         f"in {time.time() - t0:.0f}s -> {a.out}", a.log)


def _new_drafter(target, used, intermediate):
    import torch

    from .drafter import DrafterConfig, Eagle3Drafter

    c = target.cfg
    cfg = DrafterConfig(vocab_size=c.vocab_size, draft_vocab_size=len(used), hidden_size=c.hidden_size,
                        intermediate_size=intermediate or c.intermediate_size, num_heads=c.num_heads,
                        num_kv_heads=c.num_kv_heads, head_dim=c.head_dim, target_hidden_size=c.hidden_size,
                        rms_eps=c.rms_eps, rope_theta=c.rope_theta, aux_layers=list(c.aux_layers))
    d = Eagle3Drafter(cfg, target.embed)
    d.set_vocab(torch.as_tensor(used))
    with torch.no_grad():
        # Start the head from the target's (tied) output rows: the draft predicts the same tokens.
        d.lm_head.weight.copy_(target.lm_head[d.draft_ids()])
        d.norm.weight.copy_(target.w("output_norm"))
    return d


def _coverage(drafter, counts) -> float:
    """Share of the assistant tokens (`counts` [V]) that the drafter's draft vocabulary covers."""
    total = counts.sum()
    return float(counts[drafter.draft_ids().cpu().numpy()].sum() / total) if total else 0.0


def _drafter_from_export(export_dir, target, counts):
    """Warm start from an exported drafter (config.json + model.safetensors): its weights and
    its draft vocab (kept, so the head rows stay meaningful) -> (drafter, coverage on `counts`)."""
    from .export import load_drafter

    if not os.path.exists(os.path.join(export_dir, "model.safetensors")):
        raise ValueError(f"[train] --init-from {export_dir}: neither ckpt.pt nor an exported drafter (model.safetensors)")
    d = load_drafter(export_dir, target.embed).train()
    c = target.cfg
    if (d.cfg.vocab_size, d.cfg.hidden_size, list(d.cfg.aux_layers)) != (c.vocab_size, c.hidden_size, list(c.aux_layers)):
        raise ValueError(f"[train] --init-from {export_dir}: drafter does not match the target "
                         f"(vocab, hidden, aux layers {d.cfg.vocab_size}, {d.cfg.hidden_size}, {d.cfg.aux_layers} vs "
                         f"{c.vocab_size}, {c.hidden_size}, {c.aux_layers})")
    return d, _coverage(d, counts)


def _new_hydra(target, used, a):
    from .hydra import new_hydra

    return new_hydra(target, used, num_draft_heads=a.hydra_heads, head_layers=a.hydra_layers, intermediate=a.intermediate)


def _hydra_from_export(export_dir, target, counts):
    """Warm start of a Hydra run from an exported Hydra drafter (its draft vocab kept)."""
    from eyas.drafters.hydra import is_hydra

    from .hydra import load_hydra

    if not is_hydra(export_dir):
        raise ValueError(f"[train] --init-from {export_dir}: not an exported Hydra drafter")
    d = load_hydra(export_dir, target).train()
    if (d.cfg.vocab_size, d.cfg.hidden_size) != (target.cfg.vocab_size, target.cfg.hidden_size):
        raise ValueError(f"[train] --init-from {export_dir}: drafter does not match the target")
    return d, _coverage(d, counts)


def cmd_train(a):
    import numpy as np
    import torch

    from .dataset import Sequences, choose_draft_vocab, coverage_table
    from .export import save_drafter
    from .trainer import TrainArgs, train

    dev = _device(a.device)
    log = os.path.join(a.out, "train_log.jsonl")
    os.makedirs(a.out, exist_ok=True)
    data = Sequences.concat(Sequences.load(p) for p in a.data)
    target, _, _ = _load_target(a.gguf, dev)
    counts = data.assistant_counts(target.cfg.vocab_size)
    from_export = bool(a.init_from) and not os.path.exists(os.path.join(a.init_from, "ckpt.pt"))
    hydra = a.family == "hydra"
    if hydra and a.hass:
        raise ValueError("[train] --hass trains an EAGLE-3-style drafter; it does not combine with --family hydra")
    if from_export:
        drafter, cov = (_hydra_from_export if hydra else _drafter_from_export)(a.init_from, target, counts)
    else:
        used, cov = choose_draft_vocab(counts, a.draft_vocab)
        drafter = _new_hydra(target, used, a) if hydra else _new_drafter(target, used, a.intermediate)
    _log(json.dumps({"sequences": len(data), "assistant_tokens": int(counts.sum()),
                     "draft_vocab": drafter.cfg.draft_vocab_size, "coverage": round(cov, 5),
                     "coverage_by_size": {k: round(v, 5) for k, v in coverage_table(counts).items()},
                     "initialised_from_export": a.init_from if from_export else None}), log)
    if a.init_from and not from_export:
        st = torch.load(os.path.join(a.init_from, "ckpt.pt"), map_location="cpu", weights_only=False)
        drafter.load_state_dict(st["drafter"])
        _log(f"[train] initialised from {a.init_from}", log)
    drafter = drafter.to(dev)
    steps = drafter.cfg.num_draft_heads if hydra else a.ttt_steps  # a Hydra head per drafted depth
    args = TrainArgs(steps_ttt=steps, lr=a.lr, epochs=a.epochs, max_minutes=a.max_minutes,
                     tokens_per_batch=a.tokens_per_batch, max_len=a.max_len, hass=a.hass, hass_topk=a.hass_topk,
                     hass_topk_weight=a.hass_topk_weight, ckpt_every=a.ckpt_every, seed=a.seed, log_every=a.log_every)
    t0 = time.time()
    steps = train(target, drafter, data, a.out, args, dev, log=lambda m: _log(m, log))
    extra = {"method": "hydra" if hydra else "hass" if a.hass else "eagle3", "steps": steps, "train_minutes": round((time.time() - t0) / 60, 2),
             "sequences": len(data), "assistant_tokens": int(counts.sum()), "draft_vocab_coverage": round(cov, 5)}
    if hydra:
        from .hydra import save_hydra

        path = save_hydra(drafter, os.path.join(a.out, "export"), a.dtype, extra)
    else:
        path = save_drafter(drafter, os.path.join(a.out, "export"), a.dtype, extra)
    _log(f"[train] exported {path} ({os.path.getsize(path) / 2**20:.2f} MiB)", log)


def cmd_transplant(a):
    """An exported drafter moved onto the draft vocabulary chosen on `--data` (eyas.train.vocab_transplant)."""
    from eyas.drafters.hydra import is_hydra

    from .dataset import Sequences, choose_draft_vocab
    from .export import load_drafter, save_drafter
    from .hydra import load_hydra, save_hydra
    from .vocab_transplant import transplant_for_target

    target, _, _ = _load_target(a.gguf, _device("cpu"))
    data = Sequences.concat(Sequences.load(p) for p in a.data)
    counts = data.assistant_counts(target.cfg.vocab_size)
    hydra = is_hydra(a.drafter)
    old = load_hydra(a.drafter, target) if hydra else load_drafter(a.drafter, target.embed)
    if (old.cfg.vocab_size, old.cfg.hidden_size) != (target.cfg.vocab_size, target.cfg.hidden_size):
        raise ValueError(f"[train] transplant: {a.drafter} does not match the target")
    used, cov = choose_draft_vocab(counts, a.draft_vocab or old.cfg.draft_vocab_size)
    new, info = transplant_for_target(old, used, target, init=a.init)
    info.update({"drafter": a.drafter, "sequences": len(data), "assistant_tokens": int(counts.sum()),
                 "coverage_before": round(_coverage(old, counts), 5), "coverage_after": round(cov, 5)})
    extra = {"method": "vocab transplant (train-drafter transplant)", "transplant": info}
    path = (save_hydra if hydra else save_drafter)(new, a.out, a.dtype, extra)
    _log(json.dumps({"transplant": info, "out": path}), a.log)
    return info


def cmd_eval(a):
    import numpy as np
    import torch

    from eyas.drafters.hydra import is_hydra

    from .evaluate import evaluate_hydra_chain, evaluate_sequences
    from .export import load_drafter
    from .hydra import load_hydra
    from .prompts import read_jsonl

    dev = _device(a.device)
    target, tok, template = _load_target(a.gguf, dev)
    results = {}
    for pfile in a.prompts:
        name = os.path.splitext(os.path.basename(pfile))[0]
        cache = os.path.join(a.cache_dir, name + f".greedy{a.max_new}.json") if a.cache_dir else None
        if cache and os.path.exists(cache):
            with open(cache) as f:
                seqs = [tuple(x) for x in json.load(f)]
        else:
            items = _tokenize_prompts(tok, template, read_jsonl(pfile)[: a.limit or None], a.max_prompt)
            prompts = [i for i, _ in items]
            # Greedy reference continuation, in fp32 like the engine.
            resp = generate_responses(target, prompts, a.max_new, a.batch, [0.0] * len(prompts), dev, desc=name, fp32=True)
            seqs = [(p + r, len(p)) for p, r in zip(prompts, resp)]
            if cache:
                os.makedirs(a.cache_dir, exist_ok=True)
                with open(cache, "w") as f:
                    json.dump(seqs, f)
        for ddir in a.drafter:
            t0 = time.time()
            if is_hydra(ddir):
                # Hydra drafts one token per head; only its chain (top_k 1) is simulated here.
                if a.top_k != 1:
                    _log(f"[train] {ddir}: a Hydra drafter is evaluated as a chain (--top-k 1) only; skipped")
                    continue
                drafter = load_hydra(ddir, target).to(dev)
                m = evaluate_hydra_chain(target, drafter, seqs, min(a.total_tokens - 1, a.depth + 1))
            else:
                drafter = load_drafter(ddir, target.embed).to(dev)
                m = evaluate_sequences(target, drafter, seqs, a.top_k, a.depth, a.total_tokens)
            m.update({"split": name, "drafter": ddir, "prompts": len(seqs), "seconds": round(time.time() - t0, 1)})
            results.setdefault(name, []).append(m)
            _log(json.dumps(m), a.log)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(results, f, indent=1)
    return results


def cmd_pack(a):
    """An exported drafter folder with its matrices stored as GGML blocks of `--type` (the bundled drafters' form)."""
    import shutil
    from pathlib import Path

    from eyas.loaders.safetensors_mmap import write_blocks

    src, dst = Path(a.src), Path(a.out)
    files = sorted(src.glob("*.safetensors"))
    if not (src / "config.json").is_file() or not files:
        raise ValueError(f"[train] {src}: expected config.json and *.safetensors (an exported drafter)")
    if dst.resolve() == src.resolve():
        raise ValueError("[train] pack writes a new folder; --out must differ from the source")
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "config.json", dst / "config.json")
    for f in files:
        kind = a.type.upper()
        stored = write_blocks(f, dst / f.name, kind)
        before, after = f.stat().st_size, (dst / f.name).stat().st_size
        _log(f"[train] {f.name}: {sum(v == kind for v in stored.values())} matrices as {kind}, "
             f"{before / 2**20:.1f} -> {after / 2**20:.1f} MiB")


TARGET_HELP = "the target model: a .gguf file or a Hugging Face folder (anything `eyas.load` reads)"


def add_arguments(p: argparse.ArgumentParser):
    from eyas.loaders.safetensors_mmap import BLOCK_TYPES

    sub = p.add_subparsers(dest="train_cmd", required=True)
    s = sub.add_parser("prompts", help="build training prompts and held-out eval splits (offline sources)")
    s.add_argument("--out", required=True)
    s.add_argument("--source", default="template", choices=["template", "real"],
                   help="template: templated chat + function-signature code prompts (with eval splits); "
                   "real: chunks of real documents installed here (bench/fetch_sources.sh), train.jsonl only")
    s.add_argument("--n-real", type=int, default=40000, help="prompts for --source real")
    s.add_argument("--real-sources", default="pydoc,handbook,man,code")
    s.add_argument("--sdist-dir", help="folder of PyPI sdists for --source real (default ~/.cache/eyas/sdists)")
    s.add_argument("--n-chat", type=int, default=16000)
    s.add_argument("--n-code", type=int, default=16000)
    s.add_argument("--n-eval", type=int, default=80)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_prompts)

    s = sub.add_parser("self-prompts", help="the target writes chat requests itself (Magpie-style prompt source)")
    s.add_argument("--gguf", required=True, help=TARGET_HELP)
    s.add_argument("--n", type=int, required=True, help="distinct requests to keep")
    s.add_argument("--out", required=True, help="output .jsonl (rows as `prompts` writes them)")
    s.add_argument("--batch", type=int, default=256, help="samples per batch (CUDA: 1024 or more)")
    s.add_argument("--max-new", type=int, default=128, help="longest request in tokens; longer samples are dropped")
    s.add_argument("--temperature", type=float, default=1.0)
    s.add_argument("--top-p", type=float, default=0.95)
    s.add_argument("--max-rounds", type=int, default=0, help="batches at most (default: enough at a 10%% keep rate)")
    s.add_argument("--max-minutes", type=float, default=0.0, help="stop starting new batches after this")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.add_argument("--log")
    s.add_argument("--show", type=int, default=30, help="requests to print (and log) as a sample")
    s.set_defaults(func=cmd_self_prompts)

    s = sub.add_parser("generate", help="self-distillation: the target answers the prompts")
    s.add_argument("--gguf", required=True, help=TARGET_HELP)
    s.add_argument("--prompts", required=True)
    s.add_argument("--out", required=True, help="output .npz")
    s.add_argument("--max-new", type=int, default=256)
    s.add_argument("--max-prompt", type=int, default=384)
    s.add_argument("--batch", type=int, default=512)
    s.add_argument("--greedy-frac", type=float, default=0.5)
    s.add_argument("--temperature", type=float, default=0.7)
    s.add_argument("--limit", type=int, default=0)
    s.add_argument("--max-minutes", type=float, default=0.0, help="stop starting new batches after this")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.add_argument("--log")
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser("train", help="train an EAGLE-3 (or --hass, or --family hydra) drafter and export it")
    s.add_argument("--gguf", required=True, help=TARGET_HELP)
    s.add_argument("--data", required=True, nargs="+", help=".npz files from `generate`")
    s.add_argument("--out", required=True, help="run dir: ckpt.pt (resume), train_log.jsonl, export/")
    s.add_argument("--draft-vocab", type=int, default=8192)
    s.add_argument("--intermediate", type=int, default=0, help="drafter FFN size (default: the target's; Hydra's prefix block: the hidden size)")
    s.add_argument("--family", default="eagle3", choices=["eagle3", "hydra"],
                   help="eagle3: one-layer EAGLE-3 drafter (with --hass: HASS); hydra: Hydra++ heads")
    s.add_argument("--hydra-heads", type=int, default=4, help="Hydra heads (the deepest tree it drafts)")
    s.add_argument("--hydra-layers", type=int, default=2, help="blocks per Hydra head")
    s.add_argument("--hass", action="store_true", help="HASS: top-K distillation + detached context-alignment passes")
    s.add_argument("--hass-topk", type=int, default=10)
    s.add_argument("--hass-topk-weight", type=float, default=1.0)
    s.add_argument("--ttt-steps", type=int, default=7)
    s.add_argument("--lr", type=float, default=3e-4)
    s.add_argument("--epochs", type=float, default=1.0)
    s.add_argument("--max-minutes", type=float, default=0.0)
    s.add_argument("--tokens-per-batch", type=int, default=16384)
    s.add_argument("--max-len", type=int, default=1024)
    s.add_argument("--ckpt-every", type=int, default=200)
    s.add_argument("--log-every", type=int, default=20)
    s.add_argument("--init-from", help="run dir whose ckpt.pt initialises the drafter, or an exported drafter dir "
                   "(config.json + model.safetensors; its draft vocab is kept)")
    s.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("transplant", help="move an exported drafter onto a new draft vocabulary (the most frequent "
                                          "assistant tokens of --data): shared tokens keep their head rows, new ones "
                                          "start from the target's rows; everything else is kept")
    s.add_argument("--gguf", required=True, help=TARGET_HELP)
    s.add_argument("--drafter", required=True, help="exported drafter folder (EAGLE-3 or Hydra)")
    s.add_argument("--data", required=True, nargs="+", help=".npz files from `generate`: the vocabulary is chosen on them")
    s.add_argument("--out", required=True, help="folder for the transplanted export")
    s.add_argument("--draft-vocab", type=int, default=0, help="new draft vocabulary size (default: the drafter's)")
    s.add_argument("--init", default="mapped", choices=["mapped", "target"],
                   help="new tokens' head rows: the target's rows through the map fitted on the old rows (mapped), "
                   "or the target's rows as training starts them (target); eyas/train/vocab_transplant.py")
    s.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    s.add_argument("--log")
    s.set_defaults(func=cmd_transplant)

    s = sub.add_parser("pack", help="store an exported drafter's matrices as GGML blocks, which the engine runs as "
                                    "stored (Q8_0: about half the bytes of half precision, and what the CPU "
                                    "converts an unpacked drafter to; 4-bit types: a quarter, cheaper drafts)")
    s.add_argument("src", help="exported drafter folder (config.json + model.safetensors)")
    s.add_argument("--out", required=True, help="new folder")
    s.add_argument("--type", default="q8_0", choices=[t.lower() for t in BLOCK_TYPES],
                   help="block type of the matrices (default q8_0)")
    s.set_defaults(func=cmd_pack)
    s = sub.add_parser("eval", help="mean accepted length on prompt splits (exact greedy tree simulation; "
                                    "Hydra drafters: chains, --top-k 1)")
    s.add_argument("--gguf", required=True, help=TARGET_HELP)
    s.add_argument("--drafter", required=True, nargs="+", help="exported drafter dirs (EAGLE-3 or Hydra)")
    s.add_argument("--prompts", required=True, nargs="+")
    s.add_argument("--max-new", type=int, default=256)
    s.add_argument("--max-prompt", type=int, default=384)
    s.add_argument("--batch", type=int, default=128)
    s.add_argument("--top-k", type=int, default=8)
    s.add_argument("--depth", type=int, default=6)
    s.add_argument("--total-tokens", type=int, default=48, help="tree nodes including the root")
    s.add_argument("--limit", type=int, default=0)
    s.add_argument("--cache-dir", help="cache the greedy reference sequences here")
    s.add_argument("--json-out")
    s.add_argument("--log")
    s.add_argument("--device", default="auto")
    s.set_defaults(func=cmd_eval)


def main(argv=None):
    from eyas.arguments import no_abbreviations

    p = argparse.ArgumentParser(prog="eyas train-drafter", description=__doc__)
    add_arguments(p)
    no_abbreviations(p)
    a = p.parse_args(argv)
    a.func(a)


if __name__ == "__main__":
    main(sys.argv[1:])
