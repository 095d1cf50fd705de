"""Hydra++ heads (eyas.train.hydra) on the tiny random Llama GGUF of test_train: training lowers the
loss, the export has exactly the tensors the engine's loader expects, reloads bit for bit, and the
C++ HydraDrafter computes the torch drafter's logits from it."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")

from eyas.drafters.hydra import build_hydra, load_hydra as load_engine_hydra, parse_config, tensor_shapes  # noqa: E402
from eyas.train.dataset import choose_draft_vocab  # noqa: E402
from eyas.train.hydra import load_hydra, new_hydra, save_hydra  # noqa: E402
from eyas.train.trainer import TrainArgs, collate, target_signals, train, ttt_loss  # noqa: E402
from tests.test_train import V, data, target, tiny_gguf  # noqa: E402,F401  (fixtures)

HEADS, LAYERS = 3, 2


def _hydra(target, data, vd=64):  # noqa: F811
    used, _ = choose_draft_vocab(data.assistant_counts(V), vd)
    torch.manual_seed(0)
    return new_hydra(target, used, num_draft_heads=HEADS, head_layers=LAYERS)


def _perturbed(d):
    """Trained-looking weights: every tensor non-trivial, so a misplaced one changes the logits."""
    with torch.no_grad():
        for p in d.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return d


def test_training_lowers_every_heads_loss(tmp_path, target, data):  # noqa: F811
    d = _hydra(target, data)
    args = TrainArgs(steps_ttt=HEADS, lr=3e-3, epochs=8, tokens_per_batch=512, max_len=64, ckpt_every=1000,
                     log_every=1000)
    ids, lm = collate(data, list(range(16)), torch.device("cpu"))

    def losses():
        with torch.no_grad():
            f, p, mask = target_signals(target, d, ids, lm)
            return ttt_loss(d, f, ids, p, mask, args)[1]

    before = losses()
    assert len(before) == HEADS
    train(target, d, data, str(tmp_path), args, torch.device("cpu"), log=lambda m: None)
    after = losses()
    assert all(a < 0.9 * b for a, b in zip(after, before)), (before, after)


def test_features_are_the_normed_final_state(target, data):  # noqa: F811
    d = _hydra(target, data)
    ids, lm = collate(data, [0, 1], torch.device("cpu"))
    f, _, _ = target_signals(target, d, ids, lm)
    final, _ = target(ids, want_aux=False)
    assert torch.equal(f, final)


def test_export_layout_and_roundtrip(tmp_path, target, data):  # noqa: F811
    from safetensors.numpy import load_file

    d = _perturbed(_hydra(target, data))
    save_hydra(d, tmp_path, "float32", extra={"note": "test"})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert parse_config(cfg) == d.cfg and cfg["eyas"] == {"note": "test"}
    names = set(load_file(str(tmp_path / "model.safetensors")))
    assert names == set(tensor_shapes(d.cfg)) | {"d2t", "t2d"}
    back = load_hydra(tmp_path, target)
    for (n, a), (_, b) in zip(d.export_tensors().items(), back.export_tensors().items()):
        assert torch.equal(a, b), n
    assert torch.equal(back.draft_ids(), d.draft_ids())


def test_engine_loader_checks_the_checkpoint(tmp_path, tiny_gguf, target, data):  # noqa: F811
    from eyas.drafters.checkpoint import read_checkpoint
    from eyas.loaders import load_model

    save_hydra(_hydra(target, data), tmp_path, "float32")
    lm = load_model(tiny_gguf)
    h = load_engine_hydra(tmp_path, lm.spec, lm.weights, "f32")
    assert h.feature_layers == [lm.spec["num_layers"]]
    assert h.spec["num_layers"] == 1 and h.spec["layers"] == [{"mixer": "attention", "ffn": "dense_ffn"}]
    config, tensors = read_checkpoint(tmp_path)
    with pytest.raises(ValueError, match=r"hydra.head.1.in.*missing"):
        build_hydra(config, {k: v for k, v in tensors.items() if k != "hydra.head.1.in"}, lm.spec, lm.weights)
    with pytest.raises(ValueError, match=r"vocabulary of 97 tokens"):
        build_hydra(dict(config, vocab_size=97), tensors, lm.spec, lm.weights)
    with pytest.raises(ValueError, match=r"not a Hydra drafter"):
        build_hydra(dict(config, architectures=["LlamaForCausalLMEagle3"]), tensors, lm.spec, lm.weights)


def test_core_drafter_computes_the_torch_logits(tmp_path, tiny_gguf, target, data):  # noqa: F811
    from eyas.loaders import load_model

    d = _perturbed(_hydra(target, data))
    save_hydra(d, tmp_path, "float32")
    lm = load_model(tiny_gguf)
    h = load_engine_hydra(tmp_path, lm.spec, lm.weights, "f32")
    ids = torch.as_tensor(data.seq(3), dtype=torch.long)
    T = ids.shape[0]
    feats = _final_residual(lm, ids)  # what the generator hands the proposer
    with torch.no_grad():
        f, _ = target(ids[None], want_aux=False)
        c = d.context(f)[0]
    e = lambda j: d.embed[int(ids[j])]  # noqa: E731
    runtime = h.runtime(64)
    for t in (T // 2, T - 1):  # two ingests: the prefix block's KV cache must continue correctly
        start = runtime.length
        runtime.ingest(feats[start:t], ids[start + 1:t + 1].numpy().astype(np.int32))
        with torch.no_grad():
            want = d.head_logits(0, torch.cat((c[t - 1], e(t)), -1))
        np.testing.assert_allclose(np.asarray(runtime.last_logits), want.numpy(), rtol=1e-4, atol=1e-4)
    # One tree level further: head 1 over the path root -> best first draft token.
    tree = runtime.expand(2, 2, 5)
    assert list(tree["depths"]) == [0, 1, 1, 2, 2]
    first = int(tree["tokens"][1])
    with torch.no_grad():
        want1 = d.head_logits(1, torch.cat((c[T - 2], e(T - 1), d.embed[first]), -1))
    best = d.draft_ids()[torch.topk(want1, 2).indices].tolist()
    kids = [int(tok) for tok, p in zip(tree["tokens"], tree["parents"]) if p == 1]
    assert kids and set(kids) <= set(best)


def _final_residual(lm, ids):
    """F32[T, H]: the engine target's final residual (aux id num_layers) over `ids`."""
    from eyas import _core

    L = lm.spec["num_layers"]
    t = _core.Transformer(lm.spec, lm.weights, max_context=64, aux_layers=[L])
    out = t.forward(ids.numpy().astype(np.int32), logits="all", capture_aux=True)
    return np.ascontiguousarray(np.asarray(out["aux"]), dtype=np.float32)


def test_chain_simulation_matches_drafting_node_by_node(target, data):  # noqa: F811
    """evaluate_hydra_chain reads a round's drafts off one teacher-forced pass; here each round's chain
    is drafted the slow way (context from the committed prefix, each head fed the tokens drafted
    before it) on a sequence built so that rounds accept 0..HEADS tokens."""
    from eyas.train.evaluate import evaluate_hydra_chain, replay, summarize

    d = _perturbed(_hydra(target, data)).eval()
    dids = d.draft_ids()

    @torch.no_grad()
    def chain(ids, r):  # tokens drafted in the round at root r: features up to r-1, root token ids[r]
        final, _ = target(torch.tensor(ids[: r + 1])[None], want_aux=False)
        parts, out = [d.context(final)[0, r - 1], d.embed[ids[r]]], []
        for k in range(HEADS):
            out.append(int(dids[d.head_logits(k, torch.cat(parts)).argmax()]))
            parts.append(d.embed[out[-1]])
        return out

    rng = np.random.default_rng(3)
    P = 6
    ids = [int(x) for x in rng.integers(3, V, size=P + 1)]
    while len(ids) < P + 40:  # each round accepts m drafted tokens, then a token the next head did not draft
        ch = chain(ids, len(ids) - 1)
        m = int(rng.integers(0, HEADS + 1))
        ids += ch[:m]
        ids.append(next(int(t) for t in rng.integers(3, V, size=8) if m == HEADS or t != ch[m]))
    N = len(ids)
    acc = []
    for r in range(P, N - 1):
        ch, a = chain(ids, r), 0
        while a < HEADS and r + 1 + a < N and ch[a] == ids[r + 1 + a]:
            a += 1
        acc.append(a)
    want = summarize([(a, N - 1 - r) for a, r in zip(*replay(np.array(acc), P, N))], HEADS, {})
    got = evaluate_hydra_chain(target, d, [(ids, P)], HEADS)
    assert got["rounds"] == want["rounds"] and got["tokens"] == want["tokens"]
    assert got["mean_accept_length"] == pytest.approx(want["mean_accept_length"])
    assert got["per_position"] == want["per_position"] and got["mean_accept_length"] > 1.5
