"""Vocabulary transplant: a trained drafter moved onto a new draft vocabulary, without retraining.

A drafter's draft vocabulary (reference §1.3) is fixed when it is first trained: `d2t` / `t2d` and
one `lm_head` row per draft token. Data of a new kind (chat after documents) wants other tokens.
`transplant_vocab` builds a drafter over a new vocabulary `used` (ascending target ids) that keeps
everything the old one learned:

- every module except `lm_head` (the decoder layer, fc, the norms; Hydra's prefix block and heads)
  is copied unchanged;
- a token in both vocabularies keeps its old `lm_head` row, so its logit is unchanged for every input;
- a token that is new gets a row from the target's output row of that token (training's initialisation,
  `cli._new_drafter`), in one of two ways (`init`):

  * ``"target"``: the target's row as training would start it, seen through the drafter's own final
    norm: ``W_t[id] * g_t / g_d`` (g_t: the target's output norm, g_d: the drafter's). Its logit is
    the target's own logit of that token at the drafter's normalised state. Exactly training's start
    when the drafter's head is still at that start. A trained drafter has moved far from it: on the
    bundled SmolLM2 drafter these logits sit ~20 above the drafter's own (the loss is blind to a shared
    shift), so untrained new tokens would outrank every kept one.
  * ``"mapped"`` (default): the same row carried through the affine map that takes target rows to the
    drafter's rows, fitted by least squares on the kept tokens (``W_d[k] ~ [W_t'[k], 1] @ M``, ridge
    `ridge` relative to the mean squared row). When the old head is still the target's rows the map
    is the identity and this equals ``"target"``; on the bundled drafter it predicts held-out kept
    rows with cosine 0.98 (``"target"``: 0.87). With fewer kept tokens than the map has rows
    (``H + 1``) there is nothing to fit and ``"target"`` is used.

`d2t` / `t2d` are rebuilt for `used` (`DraftVocab.set_vocab`). The result is a new module on the
old one's device; the old drafter is left as it was.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch
from torch import nn

INITS = ("mapped", "target")


def _check_used(used, vocab_size) -> torch.Tensor:
    u = torch.as_tensor(np.asarray(used), dtype=torch.long).flatten().cpu()
    if len(u) == 0:
        raise ValueError("[train] transplant: the new draft vocabulary is empty")
    if bool((u[1:] <= u[:-1]).any()):
        raise ValueError("[train] transplant: the new draft vocabulary must be strictly ascending target ids")
    if int(u[0]) < 0 or int(u[-1]) >= vocab_size:
        raise ValueError(f"[train] transplant: draft ids must be in 0..{vocab_size - 1}")
    return u


def transplant_vocab(drafter, used, target_head: torch.Tensor, target_norm: torch.Tensor, init: str = "mapped",
                     ridge: float = 1e-6):
    """-> (new drafter over the draft vocabulary `used`, info dict).

    drafter: a trained drafter module with `cfg` (a dataclass with draft_vocab_size, vocab_size),
    `lm_head`, `norm` and the `DraftVocab` buffers (EAGLE-3 and Hydra). target_head: the target's
    output rows [V, H]; target_norm: its output norm weight [H]. info: counts of kept / new / dropped
    tokens, the init used and, for "mapped", the fit's relative residual on the kept rows.
    """
    if init not in INITS:
        raise ValueError(f"[train] transplant init must be one of {INITS}, got {init!r}")
    cfg = drafter.cfg
    u = _check_used(used, cfg.vocab_size)
    H = drafter.lm_head.in_features
    if tuple(target_head.shape) != (cfg.vocab_size, H) or tuple(target_norm.shape) != (H,):
        raise ValueError(f"[train] transplant: target head {tuple(target_head.shape)} / norm {tuple(target_norm.shape)} "
                         f"do not fit a drafter of vocab {cfg.vocab_size} and hidden size {H}")
    old_ids = drafter.draft_ids().detach().cpu().long()
    old_w = drafter.lm_head.weight.detach().cpu().double()  # [Vd_old, H]
    slot = torch.full((cfg.vocab_size,), -1, dtype=torch.long)
    slot[old_ids] = torch.arange(len(old_ids))
    src = slot[u]  # old row of each new draft token, -1 where new
    kept = src >= 0
    g_d = drafter.norm.weight.detach().cpu().double()
    g_t = target_norm.detach().cpu().double()
    if bool((g_d.abs() < 1e-6).any()):
        raise ValueError("[train] transplant: the drafter's final norm has a zero weight; target rows cannot be rescaled")
    scale = g_t / g_d
    tgt = target_head.detach().cpu().double()
    rows = tgt[u] * scale  # "target": the target's logits at the drafter's normalised state
    info = {"kept": int(kept.sum()), "new": int((~kept).sum()), "dropped": len(old_ids) - int(kept.sum()),
            "init": init, "draft_vocab_size": len(u)}
    if init == "mapped" and int((~kept).sum()) > 0:
        # Fit on every old row (all of them carry the drafter's map), not only the kept ones.
        a = torch.cat((tgt[old_ids] * scale, torch.ones(len(old_ids), 1, dtype=torch.float64)), 1)
        if len(old_ids) < a.shape[1]:
            info["init"] = "target"  # too few rows to determine the map
        else:
            lam = ridge * float((a * a).sum(1).mean())
            m = torch.linalg.solve(a.T @ a + lam * torch.eye(a.shape[1], dtype=torch.float64), a.T @ old_w)
            fit = a @ m
            info["fit_relative_residual"] = round(float((fit - old_w).norm() / old_w.norm().clamp_min(1e-30)), 5)
            new = ~kept
            rows[new] = torch.cat((rows[new], torch.ones(int(new.sum()), 1, dtype=torch.float64)), 1) @ m
    rows[kept] = old_w[src[kept]]

    out = copy.deepcopy(drafter)
    out.cfg = dataclasses.replace(cfg, draft_vocab_size=len(u))
    w = drafter.lm_head.weight
    out.lm_head = nn.Linear(H, len(u), bias=False).to(device=w.device, dtype=w.dtype)
    dev = drafter.d2t.device
    out.d2t = torch.zeros(len(u), dtype=torch.long, device=dev)  # re-registers the buffer at the new size
    out.t2d = torch.zeros(cfg.vocab_size, dtype=torch.bool, device=dev)
    out.set_vocab(u)
    with torch.no_grad():
        out.lm_head.weight.copy_(rows.to(w.dtype))
        if kept.any():  # bit-exact copies, not a round trip through float64
            out.lm_head.weight[kept.to(w.device)] = w.detach()[src[kept].to(w.device)]
    out.train(drafter.training)
    return out, info


def transplant_for_target(drafter, used, target, init: str = "mapped"):
    """`transplant_vocab` with the head and output norm of a `TorchTarget`."""
    return transplant_vocab(drafter, used, target.lm_head, target.w("output_norm"), init=init)
