"""Drafter training with a Qwen3.5 hybrid target: the torch training target (eyas.train.target with
eyas.train.gdn) against the C++ runtime (logits and EAGLE-3 aux features) and transformers, its cached
left-padded generation against full forwards, and a short TTT training run that lowers the loss."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")
pytest.importorskip("transformers")

from eyas.loaders import load_model  # noqa: E402
from eyas.train.dataset import Sequences, choose_draft_vocab  # noqa: E402
from eyas.train.drafter import DrafterConfig, Eagle3Drafter  # noqa: E402
from eyas.train.generate import generate_batch  # noqa: E402
from eyas.train.target import TorchTarget  # noqa: E402
from eyas.train.trainer import TrainArgs, collate, train  # noqa: E402
from tests.test_train import ttt_loss_now  # noqa: E402
from tests.fixtures import backend, tiny_qwen35  # noqa: E402

V = tiny_qwen35.VOCAB


@pytest.fixture(scope="module", params=["dense", "moe", "gguf"])
def built(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("q35train")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tiny_qwen35.make_hf("moe" if request.param == "moe" else "dense", root / "hf")
    path = tiny_qwen35.write_gguf(root / "t.gguf", model) if request.param == "gguf" else root / "hf"
    lm = load_model(path)
    return {"model": model, "lm": lm, "target": TorchTarget.from_loaded(lm, aux_layers=[0, 1, 2]).eval()}


def test_logits_and_aux_match_the_runtime_and_transformers(built):
    lm, target = built["lm"], built["target"]
    toks = np.random.default_rng(0).integers(0, V, 70)  # past transformers' 64-token chunk
    rt = backend.make_model(lm.spec, lm.weights, max_context=96, aux_layers=[0, 1, 2])
    want = rt.forward(toks.astype(np.int32), logits="all", capture_aux=True)
    with torch.no_grad():
        final, aux = target(torch.as_tensor(toks)[None])
        logits = target.logits(final)[0].numpy()
    np.testing.assert_allclose(aux[0].numpy(), np.asarray(want["aux"]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(logits, np.asarray(want["logits"]), rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(logits, tiny_qwen35.hf_logits(built["model"], toks), rtol=1e-4, atol=2e-4)


def test_cached_left_padded_generation_matches_full_forwards(built):
    """generate_batch: a kv cache (attention) and the recurrent state (gdn) across steps, prompts of
    different lengths left-padded in one batch; each response is the greedy continuation of a full forward."""
    target = built["target"]
    rng = np.random.default_rng(1)
    prompts = [rng.integers(3, V, n).tolist() for n in (3, 9, 6)]
    responses = generate_batch(target, prompts, 8)
    for p, r in zip(prompts, responses):
        seq = torch.as_tensor(p + r)[None]
        with torch.no_grad():
            final, _ = target(seq, want_aux=False)
        am = target.logits(final)[0].argmax(-1)
        assert torch.equal(am[len(p) - 1 : -1], seq[0, len(p):]), (p, r)


def test_training_on_a_qwen35_target_lowers_the_loss(built, tmp_path):
    target = built["target"]
    c = target.cfg
    rng = np.random.default_rng(2)
    prompts = [rng.integers(3, V, int(rng.integers(4, 8))).tolist() for _ in range(16)]
    data = Sequences.from_lists(prompts, generate_batch(target, prompts, 12))
    used, _ = choose_draft_vocab(data.assistant_counts(V), 64)
    cfg = DrafterConfig(vocab_size=V, draft_vocab_size=64, hidden_size=c.hidden_size, intermediate_size=96,
                        num_heads=4, num_kv_heads=2, head_dim=16, target_hidden_size=c.hidden_size,
                        rope_theta=c.rope_theta, aux_layers=c.aux_layers)
    torch.manual_seed(0)
    d = Eagle3Drafter(cfg, target.embed)
    d.set_vocab(torch.as_tensor(used))
    args = TrainArgs(steps_ttt=2, lr=3e-3, epochs=20, tokens_per_batch=256, max_len=32, ckpt_every=1000,
                     log_every=1000)
    ids, lm = collate(data, list(range(8)), torch.device("cpu"))
    before = ttt_loss_now(target, d, ids, lm, args)
    train(target, d, data, str(tmp_path), args, torch.device("cpu"), log=lambda m: None)
    assert ttt_loss_now(target, d, ids, lm, args)[0] < 0.9 * before[0]
