"""The Transformer as a list of layers of registered kinds, each with its own LayerState
(csrc/model/layer.h, layer_state.h, layers/): assembly from the model description, the state's
commit / truncate / bytes semantics, and trees given by their node parents."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from eyas import _core
from eyas.models.common import layer_kinds
from tests.test_transformer_reference import MOE, make_model, random_tree

L, HKV, D = 4, 2, 16  # make_model's defaults
MIXED = dict(arch="qwen3_moe", moe=MOE, qtype=Q.Q8_0)  # even blocks MoE, odd blocks dense


def build(kw, layers=None, **opts):
    spec, core, _ = make_model(5, **kw)
    if layers is not None:
        spec = dict(spec, layers=layers)
    return spec, _core.Transformer(spec, core, max_context=64, aux_layers=[0, 2], **opts)


def same_bits(a, b, what):
    assert a.shape == b.shape, what
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"{what}: not bit-identical"


def test_layers_derived_from_weights_and_listed_agree():
    _, dense = build(dict(qtype=Q.Q8_0))
    assert dense.layer_kinds == ["attention", "dense_ffn"] * L
    _, derived = build(MIXED)  # no "layers": a block is MoE where blk.i.ffn_gate_inp exists
    assert derived.layer_kinds == ["attention", "moe_ffn", "attention", "dense_ffn"] * (L // 2)
    _, listed = build(MIXED, layer_kinds(L, [0, 2]))
    assert listed.layer_kinds == derived.layer_kinds
    toks = np.arange(3, 13, dtype=np.int32)
    a = derived.forward(toks, logits="all", capture_aux=True)
    b = listed.forward(toks, logits="all", capture_aux=True)
    same_bits(a["logits"], b["logits"], "listed vs derived logits")
    same_bits(a["aux"], b["aux"], "listed vs derived aux")


def test_layer_list_errors():
    spec, core, _ = make_model(5, **MIXED)
    kinds = layer_kinds(L, [0, 2])

    def with_block(i, **kind):
        return [dict(k, **kind) if j == i else k for j, k in enumerate(kinds)]

    cases = [
        (with_block(1, mixer="mamba"), r"\[Transformer\] unknown layer kind 'mamba'"),
        (with_block(2, ffn="sparse"), r"\[Transformer\] unknown layer kind 'sparse'"),
        (with_block(0, mixer="dense_ffn"), "'dense_ffn' is not a mixer kind"),
        (with_block(0, ffn="attention"), "'attention' is not an FFN kind"),
        (kinds[:3], "layers must list num_layers = 4 blocks, got 3"),
        (with_block(1, ffn="moe_ffn"), "missing weight 'blk.1.ffn_gate_inp'"),  # block 1 has dense weights
        (with_block(0, ffn="dense_ffn"), "missing weight 'blk.0.ffn_gate'"),
        ("attention", "'layers' must be None or a list of dicts"),
        ([{"mixer": "attention"}] * L, "missing key 'ffn'"),
    ]
    for layers, msg in cases:
        with pytest.raises(ValueError, match=msg):
            _core.Transformer(dict(spec, layers=layers), core)
    dense_spec, dense_core, _ = make_model(5, qtype=Q.Q8_0)
    with pytest.raises(ValueError, match="layer 3 is moe_ffn but the spec has no 'moe'"):
        _core.Transformer(dict(dense_spec, layers=layer_kinds(L, [3])), dense_core)


@pytest.mark.parametrize("kv_dtype,elt", [("f32", 4), ("f16", 2)])
@pytest.mark.parametrize("kw", [dict(qtype=Q.Q8_0), MIXED], ids=["dense", "mixed"])
def test_state_bytes_follow_commit_truncate_reset(kw, kv_dtype, elt):
    """Only attention layers hold state (FFN kinds have none): K and V rows of every committed slot."""
    _, m = build(kw, kv_dtype=kv_dtype)
    per_token = L * 2 * HKV * D * elt
    assert m.state_bytes == 0
    m.forward(np.arange(6, dtype=np.int32))
    assert m.state_bytes == 0 and m.pending == 6  # written, not committed
    m.commit([0, 2, 5])
    assert m.state_bytes == 3 * per_token and m.length == 3 and m.pending == 0
    m.prefill(np.arange(4, dtype=np.int32))
    assert m.state_bytes == 7 * per_token
    m.truncate(2)
    assert m.state_bytes == 2 * per_token
    m.reset()
    assert m.state_bytes == 0 and m.length == 0


@pytest.mark.parametrize("kv_dtype", ["f32", "f16"])
@pytest.mark.parametrize("kw", [dict(qtype=Q.Q8_0), MIXED, dict(arch="qwen3", qk_norm=True, gated=True, qkv_bias=True)],
                         ids=["dense", "mixed", "qwen3-gated"])
def test_verify_then_commit_path_equals_running_it_causally(kw, kv_dtype):
    """A tree verified by parents (or mask) then commit(path) leaves every layer's state as if the path
    had run causally: the path's rows and every later row are the same bits."""
    rng = np.random.default_rng(21)
    n, T = 7, 12
    prefix = rng.integers(0, 128, n).astype(np.int32)
    parents, depths, mask = random_tree(rng, T)
    paths = []
    for leaf in range(T):
        p = [leaf]
        while parents[p[-1]] >= 0:
            p.append(int(parents[p[-1]]))
        paths.append(p[::-1])
    # The longest path whose rows must move (not already 0..m-1), so commit has work to do.
    path = max((p for p in paths if p != list(range(len(p)))), key=len)
    tree = rng.integers(0, 128, T).astype(np.int32)
    after = rng.integers(0, 128, 5).astype(np.int32)

    _, causal = build(kw, kv_dtype=kv_dtype)
    causal.prefill(prefix)
    want = causal.forward(np.concatenate([tree[path], after]), logits="all", capture_aux=True)

    _, m = build(kw, kv_dtype=kv_dtype)
    m.prefill(prefix)
    got = m.forward(tree, parents=parents, logits="all", capture_aux=True)
    by_mask = m.forward(tree, mask=mask, logits="all", capture_aux=True)  # the same tree as its mask
    same_bits(got["logits"], by_mask["logits"], "parents vs mask")
    same_bits(got["logits"][path], want["logits"][:len(path)], "tree path logits")
    same_bits(got["aux"][path], want["aux"][:len(path)], "tree path aux")
    m.commit(np.array(path, dtype=np.int32))
    assert m.length == n + len(path)
    nxt = m.forward(after, logits="all", capture_aux=True)
    same_bits(nxt["logits"], want["logits"][len(path):], "rows after the committed path")
    same_bits(nxt["aux"], want["aux"][len(path):], "aux after the committed path")


def test_parents_and_tree_mask_errors():
    _, m = build(dict(qtype=Q.Q8_0))
    toks = np.zeros(3, np.int32)
    with pytest.raises(ValueError, match=r"parents\[1\] = 1 must be in \[-1, 1\)"):
        m.forward(toks, parents=[-1, 1, 0])
    with pytest.raises(ValueError, match=r"parents\[2\] = -2"):
        m.forward(toks, parents=[-1, 0, -2])
    with pytest.raises(ValueError, match=r"parents\[2\] = -2147483648"):  # outside int32: never read as a root
        m.forward(toks, parents=np.array([-1, 0, 2**40], np.int64))
    with pytest.raises(ValueError, match="parents must have T = 3 entries"):
        m.forward(toks, parents=[-1, 0])
    with pytest.raises(ValueError, match="not both"):
        m.forward(toks, parents=[-1, 0, 0], mask=np.tril(np.ones((3, 3), np.uint8)))
    with pytest.raises(ValueError, match="depths"):
        m.forward(toks, parents=[-1, 0, 0], depths=[0, 1, 2])
    # Node 2 sees node 1 but not node 1's parent 0: visibility that no tree has.
    with pytest.raises(ValueError, match="exactly its ancestors"):
        m.forward(toks, mask=np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], np.uint8))
    assert m.length == 0 and m.pending == 0
    out = m.forward(toks, parents=[-1, 0, 0], depths=[0, 1, 1], logits="all")  # still usable; depths agree
    assert out["logits"].shape == (3, 128) and m.pending == 3


def test_hf_moe_configs_list_their_dense_blocks():
    """As transformers builds Qwen MoE blocks: MoE on the sparse step, dense in mlp_only_layers."""
    from eyas.models import qwen3_moe

    cfg = dict(model_type="qwen3_moe", vocab_size=128, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
               head_dim=16, num_hidden_layers=4, intermediate_size=96, num_experts=4, num_experts_per_tok=2,
               moe_intermediate_size=32, decoder_sparse_step=2, mlp_only_layers=[3])
    spec = qwen3_moe.spec_from_hf(cfg)
    assert [k["ffn"] for k in spec["layers"]] == ["dense_ffn", "moe_ffn", "dense_ffn", "dense_ffn"]
    assert all(k["mixer"] == "attention" for k in spec["layers"])


@pytest.mark.parametrize("tie", [True, False], ids=["tied", "untied"])
def test_weight_bytes_count_what_a_step_reads_whole(tie):
    spec, core, _ = make_model(5, qtype=Q.Q8_0, tie=tie)
    m = _core.Transformer(spec, core, max_context=16)
    whole = sum(np.asarray(w).nbytes for w, _, _ in core.values())
    embd = np.asarray(core["token_embd"][0]).nbytes
    assert m.weight_bytes == (whole if tie else whole - embd)  # a tied embedding is the head too
