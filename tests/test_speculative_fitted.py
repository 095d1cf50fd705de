"""A drafter fit to a tiny target in a few seconds (torch, CPU): high acceptance, and the greedy
output still bit-identical to plain greedy decoding."""

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams
from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
from tests.parity.cases_speculative import build, random_checkpoint
from tests.test_speculative_greedy import AUX, check_equal, make_target, take

torch = pytest.importorskip("torch")


def greedy_data(spec, core, n_seqs=32, prompt_len=3, gen_len=24, seed=0):
    """Greedy continuations of random prompts: ids [B, T], aux [B, T, 3H] of the target."""
    rng = np.random.default_rng(seed)
    t = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    ids, aux = [], []
    for _ in range(n_seqs):
        prompt = rng.integers(0, spec["vocab_size"], prompt_len).tolist()
        seq = prompt + take(plain_steps(t, prompt, SamplingParams()), gen_len)
        t.reset()
        out = t.forward(np.array(seq, np.int32), logits="none", capture_aux=True)
        ids.append(seq)
        aux.append(out["aux"])
    return np.array(ids), np.stack(aux)


class TorchDrafter(torch.nn.Module):
    """The drafter forward of reference §3 with the training-time-test unroll (§6.1)."""

    def __init__(self, tensors, embed, spec):
        super().__init__()
        self.p = torch.nn.ParameterDict({k.replace(".", "_"): torch.nn.Parameter(torch.tensor(v))
                                         for k, v in tensors.items() if v.dtype == np.float32})
        self.embed = torch.tensor(embed)
        self.nh, self.nkv, self.hd = 4, 2, spec["hidden_size"] // 4
        self.inv_freq = torch.tensor(1.0 / 10000.0 ** (np.arange(0, self.hd, 2) / self.hd), dtype=torch.float32)

    def w(self, name):
        return self.p[name.replace(".", "_")]

    @staticmethod
    def rms(x, w, eps=1e-5):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def rope(self, x, pos):  # x [B, T, h, d]; pos [T]
        ang = pos[:, None].float() * self.inv_freq[None]
        cos, sin = ang.cos()[None, :, None], ang.sin()[None, :, None]
        a, b = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    def unroll(self, aux, ids, steps):
        """Logits of each step k: pair (feature at t, token ids[t+1+k]) predicts ids[t+2+k]."""
        B, T, _ = aux.shape
        n = T - 1 - steps
        g = aux[:, :n] @ self.w("fc.weight").T
        keys, vals, outs = [], [], []
        for k in range(steps):
            tok = ids[:, 1 + k: 1 + k + n]
            e = self.embed[tok]
            gn = self.rms(g, self.w("midlayer.hidden_norm.weight"))
            u = torch.cat([self.rms(e, self.w("midlayer.input_layernorm.weight")), gn], -1)
            pos = torch.arange(n) + k
            q = self.rope((u @ self.w("midlayer.self_attn.q_proj.weight").T).view(B, n, self.nh, self.hd), pos)
            kk = self.rope((u @ self.w("midlayer.self_attn.k_proj.weight").T).view(B, n, self.nkv, self.hd), pos)
            vv = (u @ self.w("midlayer.self_attn.v_proj.weight").T).view(B, n, self.nkv, self.hd)
            keys.append(kk.repeat_interleave(2, 2))
            vals.append(vv.repeat_interleave(2, 2))
            # Step-0 keys causally, later steps' keys only at the same index (the tree's ancestors).
            s0 = torch.einsum("bthd,bshd->bhts", q, keys[0]) / self.hd ** 0.5
            s0 = s0.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
            diag = [torch.einsum("bthd,bthd->bht", q, kj)[..., None] / self.hd ** 0.5 for kj in keys[1:]]
            p = torch.softmax(torch.cat([s0] + diag, -1), -1)
            o = torch.einsum("bhts,bshd->bthd", p[..., :n], vals[0])
            for j, vj in enumerate(vals[1:]):
                o = o + p[..., n + j].permute(0, 2, 1)[..., None] * vj
            h1 = g + o.reshape(B, n, -1) @ self.w("midlayer.self_attn.o_proj.weight").T
            m = self.rms(h1, self.w("midlayer.post_attention_layernorm.weight"))
            mlp = torch.nn.functional.silu(m @ self.w("midlayer.mlp.gate_proj.weight").T) * (
                m @ self.w("midlayer.mlp.up_proj.weight").T)
            g = h1 + mlp @ self.w("midlayer.mlp.down_proj.weight").T
            outs.append(self.rms(g, self.w("norm.weight")) @ self.w("lm_head.weight").T)
        return outs, n


def fit(spec, core, steps=3, iters=60):
    torch.manual_seed(0)
    ids, aux = greedy_data(spec, core)
    cfg, tensors = random_checkpoint(9, spec, scale=0.5)
    model = TorchDrafter(tensors, core["token_embd"][0], spec)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    ids_t, aux_t = torch.tensor(ids), torch.tensor(aux)
    for _ in range(iters):
        outs, n = model.unroll(aux_t, ids_t, steps)
        loss = sum(0.8 ** k * torch.nn.functional.cross_entropy(o.reshape(-1, o.shape[-1]),
                                                                 ids_t[:, 2 + k: 2 + k + n].reshape(-1))
                   for k, o in enumerate(outs))
        opt.zero_grad()
        loss.backward()
        opt.step()
    for k in list(tensors):
        if tensors[k].dtype == np.float32:
            tensors[k] = model.w(k).detach().numpy().copy()
    return build(spec, core, cfg, tensors)


def test_fitted_drafter_high_acceptance_and_exact():
    torch.set_num_threads(1)
    spec, core = make_target(mix=0.15, tie=False)
    drafter = fit(spec, core)
    rng = np.random.default_rng(42)
    prompts = [rng.integers(0, 64, n).tolist() for n in (2, 5, 11)]
    check_equal(spec, core, drafter, prompts, [TreePolicy.chain(4), TreePolicy(4, 5, 16)], 48)
    target = _core.Transformer(spec, core, max_context=256, aux_layers=AUX)
    gen = SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy(4, 5, 16))
    take(gen.steps(prompts[0], SamplingParams()), 96)
    m = gen.metrics()
    assert m["mean_accepted_length"] > 3.0, m
