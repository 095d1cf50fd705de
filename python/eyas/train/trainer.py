"""EAGLE-3 training-time test (and HASS, and Hydra heads) training loop with checkpoints and resume.

Loss per unrolled step k: soft cross-entropy of the draft against the target distribution
restricted to the draft vocab, on assistant positions whose target argmax is in the draft vocab;
total = sum_k decay^k * loss_k (reference §6.1). HASS adds the top-K distillation term and cuts
the gradient through carried features (hass_and_user_asks.md, Part A2).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .dataset import Sequences


@dataclass
class TrainArgs:
    steps_ttt: int = 7
    decay: float = 0.8
    lr: float = 3e-4
    warmup: float = 0.02
    epochs: float = 1.0
    max_minutes: float = 0.0  # > 0: the LR schedule ends and training stops at this wall time
    tokens_per_batch: int = 16384
    max_len: int = 1024
    clip: float = 0.5
    hass: bool = False
    hass_topk: int = 10
    hass_topk_weight: float = 1.0
    ckpt_every: int = 200
    seed: int = 0
    log_every: int = 20
    # Batch lengths round up to a multiple of this: each new [rows, length] shape costs a one-time price
    # (stages 10 and 11 ran their first pass at a quarter of the later passes' rate; stage 12, padded,
    # at 4.2 steps/s against 4.5-4.6 later, docs/training.md).
    pad_multiple: int = 64


def make_batches(lengths, tokens_per_batch, max_len, rng, multiple=1):
    """Length-sorted batches (padded size <= tokens_per_batch, lengths rounded up to `multiple`), in
    shuffled order."""
    idx = np.argsort(lengths, kind="stable")
    idx = idx[(lengths[idx] >= 3) & (lengths[idx] <= max_len)]
    padded = -(-lengths // multiple) * multiple
    batches, cur = [], []
    for i in idx:
        if cur and (len(cur) + 1) * padded[i] > tokens_per_batch:
            batches.append(cur)
            cur = []
        cur.append(int(i))
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def collate(data: Sequences, rows, device, multiple=1):
    """-> ids [B, T] (right-padded with 0 to T, the longest row rounded up to `multiple`), lm [B, T]
    bool (assistant token)."""
    lens = [len(data.seq(i)) for i in rows]
    T = -(-max(lens) // multiple) * multiple
    ids = np.zeros((len(rows), T), np.int64)
    lm = np.zeros((len(rows), T), bool)
    for b, i in enumerate(rows):
        s = data.seq(i)
        ids[b, : len(s)] = s
        lm[b, data.prompt_lens[i]: len(s)] = True
    return torch.from_numpy(ids).to(device), torch.from_numpy(lm).to(device)


@torch.no_grad()
def target_signals(target, drafter, ids, lm):
    """Target aux states and soft labels for one batch.

    Returns the drafter's features (aux [B, T, 3H] for EAGLE-3; the output-normed final state
    [B, T, H] for a drafter with `reads_final`, Hydra), p [B, T, Vd] (target probs at position j
    over the draft vocab, predicting token j+1) and mask [B, T] (token j+1 is an assistant token and
    the target argmax at j is in the draft vocab).
    """
    reads_final = getattr(drafter, "reads_final", False)
    final, aux = target(ids, want_aux=not reads_final)
    used = drafter.draft_ids()
    p = torch.softmax(target.logits(final, used).float(), -1)
    full_argmax = torch.cat([target.logits(final[:, s:s + 256]).argmax(-1) for s in range(0, final.shape[1], 256)], 1)
    mask = torch.zeros_like(lm)
    mask[:, :-1] = lm[:, 1:] & drafter.t2d[full_argmax[:, :-1]]
    return (final if reads_final else aux), p, mask


def ttt_loss(drafter, aux, ids, p, mask, args: TrainArgs):
    """-> (total loss, per-step losses list[float], per-step top-1 accuracies list[float])."""
    outs = drafter.ttt(aux, ids, args.steps_ttt, detach=args.hass)
    T = ids.shape[1]
    n0 = mask[:, 1:].sum().clamp_min(1)
    total = 0.0
    losses, accs = [], []
    for k, logits in enumerate(outs):
        # Step k at index t is scored against the target at position t+1+k.
        lg = logits[:, : T - 1 - k].float()
        pk, mk = p[:, 1 + k:], mask[:, 1 + k:].float()
        if lg.shape[1] == 0:
            break
        logq = torch.log_softmax(lg, -1)
        lk = (-(pk * logq).sum(-1) * mk).sum() / n0
        if args.hass and args.hass_topk > 0:
            tp, ti = pk.topk(min(args.hass_topk, pk.shape[-1]), -1)
            lk = lk + args.hass_topk_weight * (-(tp * logq.gather(-1, ti)).sum(-1) * mk).sum() / n0
        total = total + (args.decay ** k) * lk
        losses.append(float(lk.detach()))
        hit = (lg.argmax(-1) == pk.argmax(-1)).float() * mk
        accs.append(float(hit.sum() / mk.sum().clamp_min(1)))
    return total, losses, accs


def _lr_factor(progress, warmup):
    if progress < warmup:
        return max(progress / max(warmup, 1e-9), 0.01)
    q = min((progress - warmup) / max(1 - warmup, 1e-9), 1.0)
    return 0.5 * (1 + math.cos(math.pi * q)) * 0.95 + 0.05


def gpu_memory(device) -> dict:
    """The CUDA allocator's peak reserved GiB and its retries so far (each retry frees the cached blocks
    and synchronises: a run of new batch shapes near the memory limit pays one per step), {} off CUDA."""
    if device.type != "cuda":
        return {}
    st = torch.cuda.memory_stats(device)
    return {"reserved_gib": round(st.get("reserved_bytes.all.peak", 0) / 2**30, 1),
            "alloc_retries": int(st.get("num_alloc_retries", 0))}


def train(target, drafter, data: Sequences, out_dir, args: TrainArgs, device, log=print):
    """Train `drafter` in place; checkpoints to out_dir/ckpt.pt and resumes from it if present."""
    from tqdm import tqdm

    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    params = [p for p in drafter.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    lengths = data.lengths()
    epoch_batches = make_batches(lengths, args.tokens_per_batch, args.max_len, rng, args.pad_multiple)
    if not epoch_batches:
        raise ValueError("[train] no usable training sequences (all too short or longer than max_len)")
    total_steps = max(1, int(round(len(epoch_batches) * args.epochs)))
    ckpt = os.path.join(out_dir, "ckpt.pt")
    step, spent = 0, 0.0
    if os.path.exists(ckpt):
        st = torch.load(ckpt, map_location=device, weights_only=False)
        drafter.load_state_dict(st["drafter"])
        opt.load_state_dict(st["opt"])
        step, spent = st["step"], st.get("spent", 0.0)
        rng = np.random.default_rng(args.seed + step)
        log(f"[train] resumed from {ckpt} at step {step}")
    use_amp = device.type == "cuda"
    drafter.train()
    t0 = time.time() - spent
    hist = []
    name = "hydra" if getattr(drafter, "reads_final", False) else "hass" if args.hass else "eagle3"
    bar = tqdm(total=total_steps, initial=step, desc=name, mininterval=5)
    batches = []
    while step < total_steps:
        if not batches:
            batches = make_batches(lengths, args.tokens_per_batch, args.max_len, rng, args.pad_multiple)
        rows = batches.pop()
        elapsed = time.time() - t0
        progress = step / total_steps
        if args.max_minutes > 0:
            progress = max(progress, elapsed / (60 * args.max_minutes))
            if progress >= 1.0:
                log(f"[train] time budget reached at step {step}")
                break
        for g in opt.param_groups:
            g["lr"] = args.lr * _lr_factor(progress, args.warmup)
        ids, lm = collate(data, rows, device, args.pad_multiple)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            aux, p, mask = target_signals(target, drafter, ids, lm)
            loss, losses, accs = ttt_loss(drafter, aux, ids, p, mask, args)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, args.clip)
        opt.step()
        step += 1
        bar.update(1)
        hist.append((losses, accs))
        if step % args.log_every == 0 or step == total_steps:
            L = np.mean([h[0][0] for h in hist]) if hist else 0
            A = [float(np.mean([h[1][k] for h in hist if len(h[1]) > k])) for k in range(args.steps_ttt)]
            rec = {"step": step, "of": total_steps, "min": round((time.time() - t0) / 60, 2),
                   "lr": round(opt.param_groups[0]["lr"], 7), "loss0": round(float(L), 4),
                   "acc": [round(a, 3) for a in A]}
            log(json.dumps(rec | gpu_memory(device)))
            hist = []
        if step % args.ckpt_every == 0:
            torch.save({"drafter": drafter.state_dict(), "opt": opt.state_dict(), "step": step,
                        "spent": time.time() - t0, "args": asdict(args)}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
    bar.close()
    torch.save({"drafter": drafter.state_dict(), "opt": opt.state_dict(), "step": total_steps,
                "spent": time.time() - t0, "args": asdict(args)}, ckpt + ".tmp")
    os.replace(ckpt + ".tmp", ckpt)
    drafter.eval()
    return step
