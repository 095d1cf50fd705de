"""The training target (eyas.train.target, a torch forward over the loaders' spec and weights)
against eyas's own runtime on the tiny models of every architecture, and the train CLI's
prompt path (eyas.loaders tokenizer + eyas.chat template) on a real tokenizer."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")
pytest.importorskip("transformers")

import tests.parity as parity  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.train.target import TorchTarget  # noqa: E402
from tests.fixtures import backend, tiny_models  # noqa: E402

T = 12


@pytest.fixture(scope="module", params=list(tiny_models.VARIANTS))
def built(request, tmp_path_factory):
    return tiny_models.build(request.param, tmp_path_factory.mktemp("target"), ("F32", "F16"))


@pytest.mark.parametrize("source", ["F32", "F16", "hf"])
def test_logits_and_aux_match_the_runtime(built, source):
    """Same aux features (residual stream entering each aux layer, in aux_layers order) and logits as
    the C++ runtime, within the runtime-vs-transformers tolerance: max abs error <= 1e-4 + 1e-5 * max|ref|
    (parity.TOLERANCES["f32_reduce"]). F16 weights are exact in float32 on both sides."""
    if not backend.have_runtime():
        pytest.skip("needs _core.Transformer")
    lm = load_model(built[source])
    target = TorchTarget.from_loaded(lm).eval()
    L = lm.spec["num_layers"]
    assert target.cfg.aux_layers == [2, L // 2, L - 3]  # eyas.drafters' default, here with L = 3: [2, 1, 0]
    toks = np.random.default_rng(0).integers(0, tiny_models.VOCAB, T)
    rt = backend.make_model(lm.spec, lm.weights, max_context=32, aux_layers=target.cfg.aux_layers)
    want = rt.forward(toks.astype(np.int32), logits="all", capture_aux=True)
    with torch.no_grad():
        final, aux = target(torch.as_tensor(toks)[None])
        logits = target.logits(final)[0].numpy()
    parity.assert_close(aux[0].numpy(), np.asarray(want["aux"]), "f32_reduce", f"{source} aux")
    parity.assert_close(logits, np.asarray(want["logits"]), "f32_reduce", f"{source} logits")


def test_quantized_weights_match_the_dequantized_reference(tmp_path):
    """Quantized files: the runtime rounds matmul inputs to int8 blocks, the training target does not,
    so the plain float32 reference forward on the same dequantized weights is the oracle."""
    lm = load_model(tiny_models.build("qwen3", tmp_path, ("Q4_1",))["Q4_1"])
    target = TorchTarget.from_loaded(lm, aux_layers=[0, 1, 2]).eval()
    toks = np.random.default_rng(2).integers(0, tiny_models.VOCAB, T)
    ref = backend.make_model(lm.spec, lm.weights, max_context=32, aux_layers=[0, 1, 2], reference=True)
    want = ref.forward(toks, logits="all", capture_aux=True)
    with torch.no_grad():
        final, aux = target(torch.as_tensor(toks)[None])
    parity.assert_close(aux[0].numpy(), want["aux"], "f32_reduce", "Q4_1 aux")
    parity.assert_close(target.logits(final)[0].numpy(), want["logits"], "f32_reduce", "Q4_1 logits")


def test_cached_padded_forward_matches_one_full_forward(built):
    """generate.py's path (left padding, KV cache written in pieces) gives the full forward's states."""
    target = TorchTarget.load(built["F32"]).eval()
    c = target.cfg
    toks = torch.as_tensor(np.random.default_rng(1).integers(0, tiny_models.VOCAB, T))
    pad = 3
    ids = torch.cat((torch.full((pad,), c.pad_id), toks))[None]
    key_mask = (torch.arange(pad + T) >= pad)[None]
    pos = (torch.arange(pad + T) - pad).clamp_min(0)[None]
    kv = tuple(torch.zeros(c.num_layers, 1, c.num_kv_heads, pad + T, c.head_dim) for _ in range(2))
    with torch.no_grad():
        full, _ = target(toks[None])
        a, _ = target(ids[:, :8], pos=pos[:, :8], key_mask=key_mask, kv=kv, cache_pos=0, want_aux=False)
        b, _ = target(ids[:, 8:], pos=pos[:, 8:], key_mask=key_mask, kv=kv, cache_pos=8, want_aux=False)
    got = torch.cat((a, b), 1)[0, pad:]
    torch.testing.assert_close(got, full[0], rtol=1e-5, atol=1e-5)


def test_aux_layers_out_of_range_is_a_clear_error(built):
    with pytest.raises(ValueError, match=r"\[train\] aux layers \[0, 1, 5\] are out of range"):
        TorchTarget.load(built["F32"], aux_layers=[0, 1, 5])


def test_generate_command_uses_the_engines_tokenizer_and_template(tmp_path):
    """`generate` renders prompts with eyas.chat and encodes them with eyas.tokenizer, as `eyas.load` does."""
    from eyas.train.cli import main as train_main
    from eyas.train.dataset import Sequences

    path = tiny_models.random_llama_gguf(tmp_path / "t.gguf")
    prompts = ["Hello world!", "The quick brown fox", "numbers 12345"]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"prompt": p, "kind": "chat"}) + "\n" for p in prompts))
    train_main(["generate", "--gguf", str(path), "--prompts", str(tmp_path / "p.jsonl"), "--out",
                str(tmp_path / "d.npz"), "--max-new", "6", "--batch", "2", "--device", "cpu"])
    data = Sequences.load(tmp_path / "d.npz")
    lm = load_model(path)
    assert len(data) == 3
    for i, p in enumerate(prompts):
        want = lm.tokenizer.encode(lm.chat_template.render(p), add_bos=False)
        assert data.seq(i)[: data.prompt_lens[i]].tolist() == want
        resp = data.seq(i)[data.prompt_lens[i]:].tolist()
        assert 1 <= len(resp) <= 6
        assert not set(resp[:-1]) & set(lm.tokenizer.eos_ids)  # a row stops at its first end token
