"""The C++ Hydra++ drafter (csrc/speculative/hydra_drafter.h) on a tiny random setup: its root logits
against a numpy reference (the prefix block run by tests/reference_model.py, the heads written out
below), chunked ingest and rollback, the tree rebuilt from reference logits with the TreeBuilder, and
clear errors for a too-deep tree and missing or misshaped tensors."""

from __future__ import annotations

import numpy as np
import pytest

from eyas import _core
from tests.reference_model import ReferenceTransformer, rms_norm, silu

H, V, VD, N, R, T = 64, 300, 128, 3, 2, 7
EPS = 1e-6
i32 = np.int32
SPEC = {
    "arch": "llama", "vocab_size": V, "hidden_size": H, "num_layers": 1, "num_heads": 4, "num_kv_heads": 2,
    "head_dim": 16, "intermediate_size": 96, "rms_eps": EPS, "rope_style": "neox", "rot_dim": 16,
    "rope_inv_freq": (1.0 / 10000 ** (np.arange(0, 16, 2) / 16)).astype(np.float32),
    "qkv_bias": False, "qk_norm": False, "attn_output_gate": False, "tie_embeddings": False, "moe": None,
    "layers": [{"mixer": "attention", "ffn": "dense_ffn"}],
}


def _w(a):
    a = np.ascontiguousarray(a, np.float32)
    return (a, 0, list(a.shape))


def _make(d2t: bool):
    """Random float weights (matmuls scaled by 1/sqrt(fan_in) so activations stay O(1)) and d2t or None."""
    rng = np.random.default_rng(1)
    vd = VD if d2t else V

    def mat(rows, cols):
        return rng.standard_normal((rows, cols)) / np.sqrt(cols)

    def norm():
        return 1.0 + 0.1 * rng.standard_normal(H)

    w = {"token_embd": rng.standard_normal((V, H)), "output_norm": norm(), "blk.0.attn_norm": norm(),
         "blk.0.attn_q": mat(64, H), "blk.0.attn_k": mat(32, H), "blk.0.attn_v": mat(32, H),
         "blk.0.attn_output": mat(H, 64), "blk.0.ffn_norm": norm(), "blk.0.ffn_gate": mat(96, H),
         "blk.0.ffn_up": mat(96, H), "blk.0.ffn_down": mat(H, 96), "hydra.prefix_norm": norm(),
         "hydra.norm": norm(), "hydra.lm_head": 3.0 * mat(vd, H)}
    for i in range(N):
        w[f"hydra.head.{i}.in"] = mat(H, (i + 2) * H)
        for lyr in range(1, R):
            w[f"hydra.head.{i}.res.{lyr}"] = mat(H, H)
    table = rng.choice(V, VD, replace=False).astype(i32) if d2t else None
    return {k: _w(v) for k, v in w.items()}, table


@pytest.fixture(scope="module", params=[True, False], ids=["d2t", "identity"])
def setup(request):
    weights, d2t = _make(request.param)
    rng = np.random.default_rng(2)
    hidden = (2.0 * rng.standard_normal((T, H))).astype(np.float32)
    tokens = rng.integers(0, V, T).astype(i32)
    return weights, d2t, hidden, tokens


def _drafter(setup, **kw):
    weights, d2t = setup[:2]
    return _core.speculative.HydraDrafter(SPEC, weights, d2t, num_heads=N, head_layers=R, max_context=16, **kw)


class Reference:
    """The math in numpy: prefix outputs c [T, H] and head i's draft logits for a path."""

    def __init__(self, weights, hidden, tokens):
        self.w = {k: v[0].astype(np.float64) for k, v in weights.items()}
        self.tokens = tokens
        f = rms_norm(hidden, weights["output_norm"][0], EPS)
        # The prefix block is the reference target's block run on f (as the embedding of tokens 0..T-1),
        # its "lm_head" the identity after prefix_norm: its logits are c.
        block = {k: v for k, v in weights.items() if k.startswith("blk.0.")}
        block |= {"token_embd": _w(f), "output_norm": weights["hydra.prefix_norm"], "output": _w(np.eye(H))}
        ref = ReferenceTransformer(SPEC | {"vocab_size": len(f)}, block, max_context=len(f), aux_layers=[])
        self.c = ref.forward(np.arange(len(f)), logits="all")["logits"]

    def head(self, i, path):
        """Head i's logits [Vd] for the path [root, d_1..d_i] (target ids) from the last pair's c."""
        w = self.w
        u = np.concatenate([self.c[-1].astype(np.float64), *(w["token_embd"][t] for t in path)])
        z = u[:H] + silu(w[f"hydra.head.{i}.in"] @ u)
        for lyr in range(1, R):
            z = z + silu(w[f"hydra.head.{i}.res.{lyr}"] @ z)
        return w["hydra.lm_head"] @ rms_norm(z, w["hydra.norm"], EPS).astype(np.float64)


def _tree(ref, d2t, top_k, depth, total):
    """The tree the drafter should grow, from the reference's logits through the same TreeBuilder."""
    root = int(ref.tokens[-1])
    b = _core.speculative.TreeBuilder(top_k, depth, total, VD if d2t is not None else V, d2t)
    b.start(root, ref.head(0, [root]).astype(np.float32))
    paths = [[int(t)] for t in b.frontier_tokens]
    while b.wants_level:
        b.extend(np.stack([ref.head(b.level, [root, *p]) for p in paths]).astype(np.float32))
        paths = [paths[p] + [int(t)] for p, t in zip(b.frontier_parent_rows, b.frontier_tokens)]
    return b.finish()


def test_root_matches_the_reference(setup):
    weights, d2t, hidden, tokens = setup
    ref = Reference(weights, hidden, tokens)
    rt = _drafter(setup)
    rt.ingest(hidden, tokens)
    assert rt.length == T
    np.testing.assert_allclose(rt.last_logits, ref.head(0, [int(tokens[-1])]), rtol=1e-4, atol=1e-4)
    row = rt.last_hidden
    assert row.shape == ((N + 1) * H,)
    np.testing.assert_allclose(row[:H], ref.c[-1], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(row[H:2 * H], weights["token_embd"][0][tokens[-1]])
    assert not row[2 * H:].any()


def test_chunked_ingest_and_rollback_give_the_same_root(setup):
    weights, d2t, hidden, tokens = setup
    whole = _drafter(setup)
    whole.ingest(hidden, tokens)
    split = _drafter(setup)
    split.ingest(hidden[:3], tokens[:3])
    split.ingest(hidden[3:], tokens[3:])
    np.testing.assert_array_equal(split.last_logits, whole.last_logits)
    np.testing.assert_array_equal(split.last_hidden, whole.last_hidden)
    # Other pairs after the first 3 give their own root, and rolling them back restores the original one.
    other_h = np.flip(hidden[3:], axis=1).copy()
    other_t = (tokens[3:] + 1) % V
    whole.truncate(3)
    assert whole.length == 3
    with pytest.raises(ValueError, match=r"^\[HydraDrafter\] expand needs a preceding ingest"):
        whole.expand(2, 2, 4)
    whole.ingest(other_h, other_t)
    ref = Reference(weights, np.concatenate([hidden[:3], other_h]), np.concatenate([tokens[:3], other_t]))
    np.testing.assert_allclose(whole.last_logits, ref.head(0, [int(other_t[-1])]), rtol=1e-4, atol=1e-4)
    whole.truncate(3)
    whole.ingest(hidden[3:], tokens[3:])
    np.testing.assert_array_equal(whole.last_logits, split.last_logits)


def test_expanded_tree_matches_the_reference_tree(setup):
    weights, d2t, hidden, tokens = setup
    ref = Reference(weights, hidden, tokens)
    rt = _drafter(setup)
    rt.ingest(hidden, tokens)
    tree = rt.expand(3, 3, 22)
    want = _tree(ref, d2t, 3, 3, 22)
    assert tree["tokens"].tolist() == want["tokens"].tolist()
    assert tree["parents"].tolist() == want["parents"].tolist()
    np.testing.assert_allclose(tree["scores"], want["scores"], rtol=1e-4, atol=1e-4)
    assert tree["depths"].max() == 3  # every head ran
    # Depth 1 comes from the root's top 3 draft tokens, in target ids.
    top = np.argsort(-rt.last_logits, kind="stable")[:3]
    assert set(tree["tokens"][tree["depths"] == 1].tolist()) <= set((top if d2t is None else d2t[top]).tolist())
    assert rt.length == T  # drafting leaves the committed pairs alone
    assert rt.expand(3, 3, 22)["tokens"].tolist() == tree["tokens"].tolist()


def test_a_tree_deeper_than_the_heads_is_refused(setup):
    rt = _drafter(setup)
    rt.ingest(*setup[2:])
    with pytest.raises(ValueError, match=rf"^\[HydraDrafter\] tree depth 4 exceeds the drafter's {N} heads"):
        rt.expand(2, 4, 8)


def test_missing_or_misshaped_tensors_are_named(setup):
    weights, d2t = setup[:2]

    def make(w, **kw):
        return _core.speculative.HydraDrafter(SPEC, w, d2t, **({"num_heads": N, "head_layers": R} | kw))

    missing = {k: v for k, v in weights.items() if k != "hydra.head.1.in"}
    with pytest.raises(ValueError, match=r"^\[Transformer\] missing weight 'hydra.head.1.in'"):
        make(missing)
    bad = weights | {"hydra.head.2.in": _w(np.zeros((H, 3 * H)))}
    with pytest.raises(ValueError, match=r"^\[Transformer\] weight 'hydra.head.2.in' has shape \[64, 192\], "
                                         r"expected \[64, 256\]"):
        make(bad)
    with pytest.raises(ValueError, match=r"^\[Transformer\] missing weight 'blk.0.ffn_up'"):
        make({k: v for k, v in weights.items() if k != "blk.0.ffn_up"})
    with pytest.raises(ValueError, match=r"^\[HydraDrafter\] weights have hydra.head.0.res.1 but head_layers is 1"):
        make(weights, head_layers=1)
    with pytest.raises(ValueError, match=r"^\[Transformer\] missing weight 'hydra.head.3.in'"):
        make(weights, num_heads=N + 1)


def test_a_small_draft_vocabulary_needs_d2t():
    weights, _ = _make(True)
    with pytest.raises(ValueError, match=r"^\[HydraDrafter\] hydra.lm_head has 128 rows: a draft vocabulary"):
        _core.speculative.HydraDrafter(SPEC, weights, None, num_heads=N, head_layers=R)


@pytest.mark.slow
def test_bundled_hydra_drafts_exactly_and_its_drafts_land():
    """The Hydra drafter bundled for the default model: greedy output equal to plain decoding's, and
    a fair share of its first drafted tokens accepted (a broken feature or token offset gives ~0)."""
    import eyas

    plain = eyas.load(drafter="none", threads=1)
    hydra = eyas.load(drafter_family="hydra", threads=1)
    assert type(hydra.proposer).__name__ == "HydraProposer"
    prompt = "Explain what a Python list comprehension is, with an example."
    want = plain.generate(prompt, chat=True, max_tokens=64)
    got = hydra.generate(prompt, chat=True, max_tokens=64, tree="chain:2")
    assert got.tokens == want.tokens
    m = got.metrics
    assert m["num_drafts"] >= 10 and m["num_accepted_tokens"] / m["num_drafts"] > 0.3
