"""The Gated DeltaNet state itself against transformers' cache: after a prefill of N tokens (short of the
conv window, inside and past HF's 64-token chunk), after further decode steps, and after a draft tree whose
accepted path was committed, each gdn layer's conv window and recurrent state equal the
LinearAttentionLayer's conv_states / recurrent_states (HF grouped value heads; a GGUF's tiled ones mapped)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from eyas import _core  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from tests.fixtures import tiny_qwen35  # noqa: E402

i32 = np.int32
TOL = dict(rtol=1e-4, atol=2e-5)


@pytest.fixture(scope="module", params=["dense", "moe", "next"])
def built(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("q35state") / request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tiny_qwen35.make_hf(request.param, folder)
    return {"model": model, "folder": folder, "loaded": load_model(folder)}


def _hf_states(model, tokens):
    """{block: (conv F32[K-1, C] oldest first, recurrent F32[Hv, Dk, Dv])} after running `tokens` in one call."""
    with torch.no_grad():
        cache = model(torch.tensor([list(tokens)]), use_cache=True)["cache"]
    return {i: (layer.conv_states[0][0, :, 1:].T.numpy(), layer.recurrent_states[0][0].numpy())
            for i, layer in enumerate(cache.layers) if hasattr(layer, "recurrent_states")}


def _hf_states_stepwise(model, prompt, steps):
    """The same after a prefill of `prompt` and then one call per token of `steps` (HF's decode path)."""
    with torch.no_grad():
        cache = model(torch.tensor([list(prompt)]), use_cache=True)["cache"]
        for n, tok in enumerate(steps):
            cache = model(torch.tensor([[tok]]), cache=cache, use_cache=True,
                          position_ids=torch.tensor([[len(prompt) + n]]))["cache"]
    return {i: (layer.conv_states[0][0, :, 1:].T.numpy(), layer.recurrent_states[0][0].numpy())
            for i, layer in enumerate(cache.layers) if hasattr(layer, "recurrent_states")}


def _eyas_states(t):
    """{block: (conv, recurrent)} of every gdn mixer of a Transformer."""
    return {i // 2: (s["conv"], s["recurrent"]) for i, kind in enumerate(t.layer_kinds) if kind == "gdn"
            for s in [t.layer_state(i)]}


def _tokens(n, seed):
    return np.random.default_rng(seed).integers(0, tiny_qwen35.VOCAB, n).astype(i32)


def _compare(got, want):
    assert sorted(got) == sorted(want)
    for block in want:
        for part, g, w in zip(("conv", "recurrent"), got[block], want[block]):
            assert g.shape == w.shape, (block, part)
            np.testing.assert_allclose(g, w, **TOL, err_msg=f"block {block} {part}")


@pytest.mark.parametrize("n", [2, 9, 70])
def test_state_after_a_prefill_equals_transformers_cache(built, n):
    tokens = _tokens(n, n)
    t = _core.Transformer(built["loaded"].spec, built["loaded"].weights, max_context=96)
    t.prefill(tokens, logits="none")
    _compare(_eyas_states(t), _hf_states(built["model"], tokens))


def test_state_after_decode_steps_equals_transformers_cache(built):
    prompt, steps = _tokens(5, 1), _tokens(4, 2)
    t = _core.Transformer(built["loaded"].spec, built["loaded"].weights, max_context=32)
    t.prefill(prompt, logits="none")
    for tok in steps:
        t.decode(int(tok), logits="none")
    _compare(_eyas_states(t), _hf_states_stepwise(built["model"], prompt, steps))


def test_state_after_committing_a_tree_path_equals_transformers_cache(built):
    """A tree with siblings; the accepted path 0 -> 2 -> 4 is replayed from the committed state."""
    prompt, nodes = _tokens(6, 3), _tokens(6, 4)
    parents = np.array([-1, 0, 0, 1, 2, 2], i32)
    t = _core.Transformer(built["loaded"].spec, built["loaded"].weights, max_context=32)
    t.prefill(prompt, logits="none")
    t.forward(nodes, parents=parents, logits="none")
    t.commit(np.array([0, 2, 4], i32))
    _compare(_eyas_states(t), _hf_states(built["model"], np.concatenate([prompt, nodes[[0, 2, 4]]])))


def test_gguf_tiled_state_is_the_hf_state_with_value_heads_tiled(built, tmp_path):
    """A qwen35 GGUF keeps the value heads in llama.cpp's tiled order (HF head g*r + j at j*Hk + g); its
    state is the HF folder's with the heads and the conv's value channels moved the same way."""
    loaded = built["loaded"]
    if loaded.spec["arch"] == "qwen3next":
        pytest.skip("qwen3next GGUFs keep the grouped order (the GGUF test compares them directly)")
    g = loaded.spec["gdn"]
    hk, hv, dk, dv = g["num_k_heads"], g["num_v_heads"], g["k_head_dim"], g["v_head_dim"]
    r = hv // hk
    tiled = [0] * hv
    for gi in range(hk):
        for j in range(r):
            tiled[j * hk + gi] = gi * r + j  # tiled position -> HF head
    channels = list(range(2 * hk * dk)) + [2 * hk * dk + h * dv + i for h in tiled for i in range(dv)]
    gguf = load_model(tiny_qwen35.write_gguf(tmp_path / "m.gguf", built["model"]))
    tokens = _tokens(11, 5)
    want = {}
    for block, (conv, rec) in _hf_states(built["model"], tokens).items():
        want[block] = (conv[:, channels], rec[tiled])
    t = _core.Transformer(gguf.spec, gguf.weights, max_context=32)
    t.prefill(tokens, logits="none")
    _compare(_eyas_states(t), want)


def test_layer_state_of_a_stateless_or_attention_layer_is_empty(built):
    t = _core.Transformer(built["loaded"].spec, built["loaded"].weights, max_context=8)
    kinds = t.layer_kinds
    assert t.layer_state(kinds.index("attention")) == {} and t.layer_state(1) == {}
    with pytest.raises(ValueError, match=r"^\[layer_state\] index 8 outside \[0, 8\)"):
        t.layer_state(len(kinds))
