"""Every bad input to _core.Transformer raises a ValueError naming the problem; nothing crashes and a
failed call leaves the model usable."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from eyas import _core
from tests.test_transformer_reference import MOE, make_model


@pytest.fixture(scope="module")
def model():
    spec, core, _ = make_model(0, qtype=Q.Q8_0)
    return spec, core


def test_construction_errors(model):
    spec, core = model
    cases = [
        (dict(core, **{"blk.1.attn_k": None}), "blk.1.attn_k", "drop"),
        (dict(core, **{"blk.0.attn_q": (np.zeros((64, 64), np.float32), 0, [64, 32])}), "blk.0.attn_q", None),
        (dict(core, **{"blk.0.ffn_up": (np.zeros((96, 64), np.float32), 0, [64, 64])}), "blk.0.ffn_up", None),
        (dict(core, **{"blk.0.attn_norm": (np.zeros(64, np.int32), 26, [64])}), "blk.0.attn_norm", None),
        (dict(core, **{"output_norm": (np.zeros(64, np.uint8), 8, [64])}), "output_norm", None),
        (dict(core, **{"blk.2.attn_v": (np.zeros(10, np.uint8), 8, [32, 64])}), "blk.2.attn_v", None),
        (dict(core, **{"blk.2.attn_v": (np.zeros(10, np.uint8), 999, [32, 64])}), "blk.2.attn_v", None),
        (dict(core, **{"blk.2.attn_v": "nope"}), "blk.2.attn_v", None),
    ]
    for weights, name, how in cases:
        if how == "drop":
            weights = {k: v for k, v in weights.items() if v is not None}
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            _core.Transformer(spec, weights)
    bad_specs = [
        (dict(spec, arch="gpt2"), "arch"),
        (dict(spec, num_kv_heads=3), "num_kv_heads"),
        (dict(spec, rot_dim=7), "rot_dim"),
        (dict(spec, rope_inv_freq=np.zeros(3, np.float32)), "rope_inv_freq"),
        (dict(spec, rope_style="yarn"), "rope_style"),
        ({k: v for k, v in spec.items() if k != "hidden_size"}, "hidden_size"),
        (dict(spec, moe=dict(MOE, top_k=9)), "top_k"),
    ]
    for s, what in bad_specs:
        with pytest.raises(ValueError, match=what):
            _core.Transformer(s, core)
    with pytest.raises(ValueError, match="aux layer"):
        _core.Transformer(spec, core, aux_layers=[5])
    with pytest.raises(ValueError, match="max_context"):
        _core.Transformer(spec, core, max_context=0)


def test_forward_and_commit_errors(model):
    spec, core = model
    m = _core.Transformer(spec, core, max_context=8)
    V = spec["vocab_size"]
    with pytest.raises(ValueError, match="empty"):
        m.forward(np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="token id 128"):
        m.forward(np.array([1, V], np.int32))
    with pytest.raises(ValueError, match="token id -1"):
        m.forward(np.array([-1], np.int32))
    with pytest.raises(ValueError, match="tokens"):
        m.forward(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="capacity"):
        m.forward(np.zeros(9, np.int32))
    with pytest.raises(ValueError, match="logits"):
        m.forward(np.zeros(1, np.int32), logits="some")
    toks = np.zeros(3, np.int32)
    tri = np.tril(np.ones((3, 3), np.uint8))
    with pytest.raises(ValueError, match=r"mask must be \[T, T\]"):
        m.forward(toks, mask=np.ones((3, 2), np.uint8), depths=np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="mask must be a uint8"):
        m.forward(toks, mask=tri.astype(np.float32))
    with pytest.raises(ValueError, match="sees itself"):
        m.forward(toks, mask=np.array([[1, 0, 0], [1, 0, 0], [1, 1, 1]], np.uint8))
    with pytest.raises(ValueError, match="earlier nodes"):
        m.forward(toks, mask=np.ones((3, 3), np.uint8))
    with pytest.raises(ValueError, match="depths"):
        m.forward(toks, mask=tri, depths=np.array([0, 1, 1], np.int32))
    with pytest.raises(ValueError, match="depths"):
        m.forward(toks, mask=tri, depths=np.arange(2, dtype=np.int32))
    with pytest.raises(ValueError, match="depths need a mask"):
        m.forward(toks, depths=np.arange(3, dtype=np.int32))
    # commit: only rows of the last forward, strictly increasing.
    with pytest.raises(ValueError, match="out of range"):
        m.commit([0])
    m.forward(toks, mask=tri)  # depths derived from the mask
    with pytest.raises(ValueError, match="out of range"):
        m.commit([3])
    with pytest.raises(ValueError, match="increasing"):
        m.commit([1, 1])
    with pytest.raises(ValueError, match="truncate"):
        m.truncate(1)
    assert m.length == 0
    m.commit([0, 1, 2])
    assert m.length == 3
    with pytest.raises(ValueError, match="out of range"):
        m.commit([0])  # a commit consumes the forward
    # Still usable after every failure.
    out = m.forward(np.array([5], np.int32))
    assert out["logits"].shape == (1, V) and np.all(np.isfinite(out["logits"]))
