"""Batched self-distillation generation with the torch target (left-padded, KV-cached).

Each row has its own temperature: 0 = greedy, > 0 = temperature + nucleus sampling. Rows stop
at any of the target's end-of-sequence ids; the batch stops when every row has stopped or after max_new tokens.
"""

from __future__ import annotations

import torch


def _sample(logits, temps, top_p, gen, candidates=256):
    """logits: [B, V] fp32; temps: [B] (0 = greedy) -> [B] token ids.

    Nucleus sampling over the `candidates` most likely tokens (probabilities normalised over
    the whole vocab): a full-vocab sort per step dominated generation time, and at
    temperature <= 1 the top 256 hold the 0.95 nucleus in practice; if not, it is cut there.
    """
    greedy = logits.argmax(-1)
    if not bool((temps > 0).any()):
        return greedy
    scaled = logits / temps.clamp_min(1e-4)[:, None]
    top, idx = scaled.topk(min(candidates, scaled.shape[-1]), -1)  # sorted, descending
    sp = torch.exp(top - torch.logsumexp(scaled, -1, keepdim=True))
    keep = (sp.cumsum(-1) - sp) < top_p  # smallest prefix with mass >= top_p
    sp = sp * keep
    pick = torch.multinomial(sp / sp.sum(-1, keepdim=True), 1, generator=gen)[:, 0]
    sampled = idx.gather(1, pick[:, None])[:, 0]
    return torch.where(temps > 0, sampled, greedy)


def graph_friendly(model) -> bool:
    """Whether a decode step of `model` keeps the same shapes and never waits for the GPU, as a captured
    graph needs: not with Gated DeltaNet layers (their state is carried on the host side) or MoE FFNs
    (their experts are chosen on the host)."""
    return "gdn" not in model.mixers and "moe_ffn" not in model.ffn_kinds


class StaticStep:
    """One decode step of a batch with the same shapes every step: the cache slot and positions are
    device tensors and attention reads all of the cache, masked (TorchTarget.forward with a tensor
    cache_pos). On CUDA the step is captured once as a graph and replayed: run eagerly, a small
    target's step is hundreds of kernel launches that cost more than their work. Call it with the step's
    tokens [B], positions [B, 1] and slot -> the next logits [B, V] (valid until the next call)."""

    def __init__(self, model, key_mask, kv):
        dev, B = key_mask.device, key_mask.shape[0]
        self.tok = torch.zeros(B, 1, dtype=torch.long, device=dev)
        self.pos = torch.zeros(B, 1, dtype=torch.long, device=dev)
        self.slot = torch.zeros((), dtype=torch.long, device=dev)
        # Attributes, not a closure over self: a reference cycle would keep the cache alive after the batch.
        self.model, self.key_mask, self.kv = model, key_mask, kv
        self.cuda = dev.type == "cuda"
        self.graph = self.out = None

    def run(self):
        final, _ = self.model(self.tok, pos=self.pos, key_mask=self.key_mask, kv=self.kv, cache_pos=self.slot,
                              want_aux=False)
        return self.model.logits(final[:, -1])

    def __call__(self, tok, pos, slot: int):
        self.tok.copy_(tok[:, None])
        self.pos.copy_(pos)
        self.slot.fill_(slot)
        if not self.cuda:
            return self.run()
        if self.graph is None:
            # A graph must not capture autocast's cache of cast weights; the warm-up on a side stream (as
            # torch.cuda.graph asks) writes this step's K and V, which the replay writes again.
            with torch.autocast("cuda", dtype=torch.get_autocast_dtype("cuda"),
                                enabled=torch.is_autocast_enabled("cuda"), cache_enabled=False):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    self.run()
                torch.cuda.current_stream().wait_stream(side)
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.out = self.run()
        self.graph.replay()
        return self.out


@torch.no_grad()
def generate_batch(model, prompts, max_new, temps=None, top_p=0.95, seed=0, dtype=torch.float32, prefill_chunk=512,
                   stop_ids=None, static=None):
    """prompts: list of token-id lists -> list of response id lists (each ends with EOS if it stopped).

    dtype: KV cache dtype (bf16 on GPU under autocast, fp32 on CPU).
    prefill_chunk: prompt tokens per prefill pass (long prompts: attention scores stay
    [B, heads, chunk, S] instead of [B, heads, P, P]).
    stop_ids: the ids a row stops at (default the target's end-of-sequence ids; self-written
    prompts also stop at the template's end-of-turn token).
    static: decode steps through `StaticStep` (default: on CUDA, for targets `graph_friendly` accepts).
    """
    c = model.cfg
    dev = model.embed.device
    B = len(prompts)
    P = max(len(p) for p in prompts)
    S = P + max_new
    ids = torch.full((B, P), c.pad_id, dtype=torch.long, device=dev)
    pad = torch.tensor([P - len(p) for p in prompts], device=dev)
    for b, p in enumerate(prompts):
        ids[b, P - len(p):] = torch.tensor(p, device=dev)
    key_mask = torch.arange(S, device=dev)[None, :] >= pad[:, None]  # [B, S], padding off
    kv = tuple(torch.zeros(c.num_layers, B, c.num_kv_heads, S, c.head_dim, dtype=dtype, device=dev) for _ in range(2))
    pos = (torch.arange(P, device=dev)[None, :] - pad[:, None]).clamp_min(0)
    temps = torch.zeros(B, device=dev) if temps is None else torch.as_tensor(temps, dtype=torch.float32, device=dev)
    gen = torch.Generator(device=dev).manual_seed(seed)
    stop = torch.as_tensor(list(stop_ids) if stop_ids else c.eos_ids, device=dev)
    for s0 in range(0, P, prefill_chunk):
        s1 = min(P, s0 + prefill_chunk)
        final, _ = model(ids[:, s0:s1], pos=pos[:, s0:s1], key_mask=key_mask, kv=kv, cache_pos=s0, want_aux=False)
    out = torch.full((B, max_new), c.eos_id, dtype=torch.long, device=dev)
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    lens = torch.full((B,), max_new, dtype=torch.long, device=dev)
    if static is None:
        static = dev.type == "cuda" and graph_friendly(model)
    step_logits = StaticStep(model, key_mask, kv) if static else None
    logits = model.logits(final[:, -1])
    for step in range(max_new):
        tok = _sample(logits.float(), temps, top_p, gen)
        tok = torch.where(done, torch.full_like(tok, c.eos_id), tok)
        out[:, step] = tok
        newly = (~done) & torch.isin(tok, stop)
        lens = torch.where(newly, torch.full_like(lens, step + 1), lens)
        done = done | newly
        # Finished rows only ever add EOS, so asking every 8 steps (each ask waits for the GPU) keeps the output.
        if step + 1 == max_new or (step % 8 == 7 and bool(done.all())):
            break
        p = (P + step - pad)[:, None]
        if step_logits is not None:
            logits = step_logits(tok, p, P + step)
        else:
            final, _ = model(tok[:, None], pos=p, key_mask=key_mask, kv=kv, cache_pos=P + step, want_aux=False)
            logits = model.logits(final[:, -1])
    out, lens = out.cpu(), lens.cpu()
    return [out[b, : int(lens[b])].tolist() for b in range(B)]
