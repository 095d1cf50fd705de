"""Generation sampling and warm starts for drafter training (CPU, tiny model, seconds)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")

from eyas.train.cli import main as train_main  # noqa: E402
from eyas.train.export import load_drafter, save_drafter  # noqa: E402
from eyas.train.generate import _sample  # noqa: E402
from tests.test_train import _drafter, data, target, tiny_gguf  # noqa: E402,F401  (fixtures)


def _nucleus(logits, temp, top_p):
    """Exact nucleus distribution over the whole vocab (the reference for _sample)."""
    p = torch.softmax(logits / temp, -1)
    sp, si = p.sort(descending=True)
    keep = (sp.cumsum(-1) - sp) < top_p
    out = torch.zeros_like(p)
    out[si[keep]] = sp[keep]
    return out / out.sum()


def test_sample_matches_exact_nucleus_and_greedy_rows():
    torch.manual_seed(0)
    V, N = 40, 20000
    row = torch.randn(V) * 2
    logits = row.expand(N, V).contiguous()
    temps = torch.full((N,), 0.7)
    temps[::2] = 0.0  # greedy rows
    gen = torch.Generator().manual_seed(1)
    tok = _sample(logits, temps, 0.9, gen, candidates=16)
    assert bool((tok[::2] == row.argmax()).all())
    want = _nucleus(row, 0.7, 0.9)
    assert int((want > 0).sum()) < 16, "the test needs the nucleus inside the candidates"
    got = torch.bincount(tok[1::2], minlength=V).float() / (N // 2)
    assert bool((got[want == 0] == 0).all()), "sampled a token outside the nucleus"
    assert float((got - want).abs().max()) < 0.02, (got, want)


def test_sample_cuts_the_nucleus_at_the_candidates():
    logits = torch.zeros(4, 50)  # flat: the 0.95 nucleus needs 48 tokens
    tok = _sample(logits, torch.ones(4), 0.95, torch.Generator().manual_seed(0), candidates=8)
    top8 = set(logits[0].topk(8).indices.tolist())
    assert set(tok.tolist()) <= top8


def test_warm_start_from_an_export_keeps_its_vocab(tmp_path, tiny_gguf, target, data):  # noqa: F811
    d = _drafter(target, data, vd=48)
    save_drafter(d, tmp_path / "start", "float32")
    data.save(str(tmp_path / "d.npz"))
    run = tmp_path / "run"
    train_main(["train", "--gguf", str(tiny_gguf), "--data", str(tmp_path / "d.npz"), "--out", str(run),
                "--init-from", str(tmp_path / "start"), "--draft-vocab", "64", "--ttt-steps", "2",
                "--epochs", "1", "--tokens-per-batch", "512", "--max-len", "64", "--dtype", "float32",
                "--device", "cpu", "--lr", "0"])
    log = [json.loads(x) for x in (run / "train_log.jsonl").read_text().splitlines()]  # every line is JSON
    assert any(r.get("initialised_from_export") for r in log)
    assert any(r.get("message", "").startswith("[train] exported") for r in log)
    out = load_drafter(run / "export", target.embed)
    assert out.cfg.draft_vocab_size == 48 and torch.equal(out.draft_ids(), d.draft_ids())
    # lr 0: the warm-started weights come back unchanged.
    for k, v in d.state_dict().items():
        assert torch.equal(out.state_dict()[k], v), k


def test_warm_start_from_a_folder_without_weights_is_a_clear_error(tmp_path, tiny_gguf, data):  # noqa: F811
    data.save(str(tmp_path / "d.npz"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"\[train\] --init-from .*neither ckpt.pt nor an exported drafter"):
        train_main(["train", "--gguf", str(tiny_gguf), "--data", str(tmp_path / "d.npz"), "--out", str(tmp_path / "r"),
                    "--init-from", str(tmp_path / "empty"), "--device", "cpu"])
