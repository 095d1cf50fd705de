"""Exact greedy simulation of EAGLE-3 decoding with an EAGLE-2 dynamic tree (reference §4.1, §5.2).

Under greedy decoding the committed text equals the target's greedy continuation, and after each
round the drafter's cache holds target-conditioned entries for every committed position (§3.1).
So the tree drafted at root position r depends only on r: we draft a tree for EVERY r in one
batched pass, score each by the longest selected root-to-node path that matches the greedy
continuation, then replay the rounds (r -> r + accepted + 1). The target is never run on the tree:
its argmax along a matching path is, by definition, the next greedy token.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


@torch.no_grad()
def draft_trees(drafter, aux, ids, roots, top_k=8, depth=6, total_tokens=48):
    """Accepted draft length for each root.

    aux: [N, 3Ht] target aux states of the sequence; ids: [N] its tokens; roots: [R] positions
    (>= 1) whose token is the tree root. total_tokens counts the root (EAGLE's total_token).
    Returns accepted [R] (0 .. depth+1).
    """
    c = drafter.cfg
    N = ids.shape[0]
    rep = c.num_heads // c.num_kv_heads
    scale = 1.0 / math.sqrt(c.head_dim)
    dids = drafter.draft_ids()
    # Step 0 over the committed sequence: pair (feature t, token t+1) at RoPE position t.
    pos0 = torch.arange(N - 1, device=ids.device)
    g0, q0, k0, v0 = drafter.project(aux[: N - 1], ids[1:], pos0)
    k0h, v0h = k0.repeat_interleave(rep, 1), v0.repeat_interleave(rep, 1)  # [N-1, nh, hd]
    s = torch.einsum("thd,shd->hts", q0, k0h) * scale
    s = s.masked_fill(pos0[None, None, :] > pos0[None, :, None], float("-inf"))
    a0 = torch.einsum("hts,shd->thd", torch.softmax(s, -1), v0h).reshape(N - 1, -1)
    h0, logits0 = drafter.finish(g0, a0)

    t = roots - 1  # index of the step-0 pair whose output drafts level 1
    R = roots.shape[0]
    logp = torch.log_softmax(logits0[t].float(), -1)
    sc, ix = logp.topk(top_k, -1)  # [R, k]
    pool_tok, pool_score, pool_parent = [dids[ix]], [sc], [torch.full_like(ix, -1)]
    front_idx = torch.arange(top_k, device=ids.device).expand(R, top_k)  # pool index of frontier nodes
    front_tok, front_score = dids[ix], sc
    front_h = h0[t][:, None, :].expand(R, top_k, -1)
    anc_k, anc_v = [], []  # per lineage: [R, k, nh, hd] entries of earlier tree forwards
    n_pool = top_k
    key_ok = pos0[None, :] <= t[:, None]  # [R, N-1]
    for it in range(depth):
        pos = (t + 1 + it)[:, None].expand(R, top_k)
        g, q, kk, vv = drafter.project(front_h, front_tok, pos)
        kk, vv = kk.repeat_interleave(rep, -2), vv.repeat_interleave(rep, -2)
        sp = torch.einsum("rkhd,shd->rkhs", q, k0h) * scale
        sp = sp.masked_fill(~key_ok[:, None, None, :], float("-inf"))
        ks, vs = anc_k + [kk], anc_v + [vv]
        sa = torch.stack([(q * kj).sum(-1) for kj in ks], -1) * scale  # [R, k, nh, it+1]
        p = torch.softmax(torch.cat((sp, sa), -1), -1)
        att = torch.einsum("rkhs,shd->rkhd", p[..., : N - 1], v0h)
        for j, vj in enumerate(vs):
            att = att + p[..., N - 1 + j, None] * vj
        h, logits = drafter.finish(g, att.reshape(R, top_k, -1))
        lp = torch.log_softmax(logits.float(), -1)
        csc, cix = lp.topk(top_k, -1)  # [R, k, k]
        cum = (front_score[:, :, None] + csc).reshape(R, -1)
        ctok = dids[cix].reshape(R, -1)
        cpar = front_idx[:, :, None].expand(R, top_k, top_k).reshape(R, -1)
        pool_tok.append(ctok), pool_score.append(cum), pool_parent.append(cpar)
        best_sc, best = cum.topk(top_k, -1)  # next frontier
        slot = best // top_k  # which current frontier node is the parent
        front_idx = n_pool + best
        front_tok, front_score = ctok.gather(1, best), best_sc
        gat = lambda x: x.gather(1, slot.view(R, top_k, *[1] * (x.dim() - 2)).expand(R, top_k, *x.shape[2:]))  # noqa: E731
        front_h = gat(h)
        anc_k = [gat(x) for x in ks]
        anc_v = [gat(x) for x in vs]
        n_pool += top_k * top_k
    tok = torch.cat(pool_tok, 1)  # [R, P]
    score = torch.cat(pool_score, 1)
    parent = torch.cat(pool_parent, 1)
    sel = torch.zeros_like(tok, dtype=torch.bool)
    sel.scatter_(1, score.topk(min(total_tokens - 1, score.shape[1]), -1).indices, True)
    # Levels: 1 for the first top_k, then top_k^2 per expansion.
    level = torch.cat([torch.ones(top_k, dtype=torch.long)] + [torch.full((top_k * top_k,), l + 2, dtype=torch.long) for l in range(depth)]).to(ids.device)
    want_pos = roots[:, None] + level[None, :]
    want = torch.where(want_pos < N, ids[want_pos.clamp_max(N - 1)], torch.full_like(tok, -1))
    ok = torch.zeros_like(sel)
    start = 0
    for l in range(depth + 1):
        n = top_k if l == 0 else top_k * top_k
        sl = slice(start, start + n)
        par_ok = torch.ones_like(sel[:, sl]) if l == 0 else ok.gather(1, parent[:, sl])
        ok[:, sl] = sel[:, sl] & (tok[:, sl] == want[:, sl]) & par_ok
        start += n
    return (ok * level[None, :]).max(1).values


@torch.no_grad()
def evaluate_sequences(target, drafter, seqs, top_k=8, depth=6, total_tokens=48, chunk=256):
    """seqs: list of (token ids, prompt_len) greedy target sequences -> metrics dict.

    mean_accept_length = tokens emitted per round (target forward), bonus token included; the
    token sampled at prefill is not counted. per_position[k-1] =
    P(draft token k accepted | tokens 1..k-1 accepted).
    """
    rounds = []
    for ids, P, N in _usable(seqs, target.embed.device):
        _, aux = target(ids[None])
        roots = torch.arange(P, N - 1, device=ids.device)
        acc = torch.cat([draft_trees(drafter, aux[0], ids, roots[s:s + chunk], top_k, depth, total_tokens)
                         for s in range(0, len(roots), chunk)]).cpu().numpy()
        rounds += [(a, N - 1 - r) for a, r in zip(*replay(acc, P, N))]
    return summarize(rounds, depth + 1, {"top_k": top_k, "depth": depth, "total_tokens": total_tokens})


def _usable(seqs, dev):
    """(ids on dev, prompt length, length) of each (token ids, prompt_len) sequence with at least two
    generated tokens (one round needs a root and a token after it)."""
    for ids_list, P in seqs:
        ids = torch.as_tensor(ids_list, dtype=torch.long, device=dev)
        if ids.shape[0] - P >= 2:
            yield ids, P, int(ids.shape[0])


def summarize(rounds, levels, extra):
    """rounds: (accepted, room left) per round -> the metrics dict of evaluate_sequences."""
    if not rounds:
        raise ValueError("[train] evaluation has no sequence with at least two generated tokens")
    a = np.array([x[0] for x in rounds])
    room = np.array([x[1] for x in rounds])
    per = []
    for k in range(1, levels + 1):
        reach = (a >= k - 1) & (room >= k)
        per.append(float((a[reach] >= k).mean()) if reach.any() else float("nan"))
    # A round emits its accepted tokens plus the target's bonus token, except when the accepted
    # path already reaches the end of the reference text (EOS or the length limit).
    emitted = a + (a < room)
    return {"mean_accept_length": float(emitted.mean()), "rounds": int(len(a)), "tokens": int(emitted.sum()),
            "per_position": [round(x, 4) for x in per], **extra}


@torch.no_grad()
def evaluate_hydra_chain(target, drafter, seqs, length=4):
    """Exact greedy simulation of a Hydra drafter drafting a chain of `length` tokens (one per head).

    A chain is one path, so the heads' inputs along an accepted prefix are the reference tokens
    themselves: the teacher-forced forward (HydraDrafter.ttt) on the greedy sequence gives, at index
    t = root - 1, the token each head drafts for the round at that root. Accepted = the number of
    leading heads whose argmax equals the greedy continuation; rounds replay as for EAGLE-3.
    """
    dev = target.embed.device
    length = min(length, drafter.cfg.num_draft_heads)
    dids = drafter.draft_ids()
    rounds = []
    for ids, P, N in _usable(seqs, dev):
        final, _ = target(ids[None], want_aux=False)
        heads = drafter.ttt(final, ids[None], length)
        t = torch.arange(P - 1, N - 2, device=dev)  # roots P .. N-2
        ok = torch.ones_like(t, dtype=torch.bool)
        acc = torch.zeros_like(t)
        for k, logits in enumerate(heads):
            want = t + 2 + k
            hit = (dids[logits[0, t].argmax(-1)] == ids[want.clamp_max(N - 1)]) & (want < N)
            ok = ok & hit
            acc = acc + ok.long()
        rounds += [(a, N - 1 - r) for a, r in zip(*replay(acc.cpu().numpy(), P, N))]
    return summarize(rounds, length, {"top_k": 1, "depth": length - 1, "total_tokens": length + 1, "family": "hydra"})


def replay(acc, P, N):
    """Greedy rounds from the first root (index P): -> (accepted counts, root positions)."""
    r, aa, rr = P, [], []
    while r <= N - 2:
        a = int(min(acc[r - P], N - 1 - r))
        aa.append(a), rr.append(r)
        r += a + 1
    return aa, rr
