"""Vocabulary transplant (eyas.train.vocab_transplant) on the tiny random Llama GGUF of test_train, CPU:
kept tokens keep their logits, new tokens start from the target's rows, everything but the head is
unchanged, and the export loads in the engine, whose greedy speculative output equals plain output."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")

from eyas.train.cli import _new_drafter, main as train_main  # noqa: E402
from eyas.train.dataset import choose_draft_vocab  # noqa: E402
from eyas.train.export import load_drafter, save_drafter  # noqa: E402
from eyas.train.vocab_transplant import transplant_for_target, transplant_vocab  # noqa: E402
from tests.test_train import FF, H, V, _drafter, data, target, tiny_gguf  # noqa: E402,F401  (fixtures)


def _perturbed(d, seed=0):
    """Trained-looking weights: every tensor moved, the final norm too (so g_d != g_t)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in d.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
        d.norm.weight.mul_(torch.rand(H, generator=g) + 0.5)
    return d


def _other_vocab(old_ids, n, seed=1):
    """n ascending ids: most of old_ids, some dropped, some new."""
    rng = np.random.default_rng(seed)
    old = set(old_ids.tolist())
    n_new = min(n // 4, V - len(old))
    keep = rng.choice(sorted(old), size=n - n_new, replace=False)
    new = rng.choice(sorted(set(range(V)) - old), size=n_new, replace=False)
    return np.sort(np.concatenate([keep, new])).astype(np.int64)


def _head_inputs(d, aux, ids, steps):
    """The normalised states the drafter's lm_head reads at each unrolled step, [steps, T, H], and its logits."""
    xs = []
    h = d.lm_head.register_forward_hook(lambda m, i, o: xs.append(i[0].detach()))
    with torch.no_grad():
        logits = d.ttt(aux, ids, steps)
    h.remove()
    return torch.stack([x[0] for x in xs]), torch.stack([lg[0] for lg in logits])


def test_kept_logits_unchanged_and_new_rows_are_the_targets(target, data):  # noqa: F811
    old = _perturbed(_drafter(target, data, vd=48))
    old_ids = old.draft_ids().numpy()
    used = _other_vocab(old_ids, 48)
    new, info = transplant_for_target(old, used, target, init="target")
    assert info["init"] == "target" and info["kept"] + info["new"] == 48 and info["kept"] + info["dropped"] == 48
    assert info["new"] == 12
    # Maps rebuilt for the new vocabulary.
    assert torch.equal(new.draft_ids(), torch.as_tensor(used)) and new.cfg.draft_vocab_size == 48
    assert int(new.t2d.sum()) == 48 and bool(new.t2d[torch.as_tensor(used)].all())
    assert torch.equal(old.draft_ids(), torch.as_tensor(old_ids)), "the old drafter must be left as it was"
    # Everything but the head is the old drafter's.
    for k, v in old.state_dict().items():
        if k not in ("lm_head.weight", "d2t", "t2d"):
            assert torch.equal(new.state_dict()[k], v), k
    ids = torch.as_tensor(data.seq(5), dtype=torch.long)[None]
    with torch.no_grad():
        _, aux = target(ids)
    x_old, lg_old = _head_inputs(old, aux, ids, 3)
    x_new, lg_new = _head_inputs(new, aux, ids, 3)
    assert torch.equal(x_old, x_new)
    pos = {int(t): i for i, t in enumerate(old_ids)}
    kept = [j for j, t in enumerate(used) if int(t) in pos]
    fresh = [j for j, t in enumerate(used) if int(t) not in pos]
    # Kept tokens: bit-identical logits at every unrolled step.
    assert torch.equal(lg_new[..., kept], lg_old[..., [pos[int(used[j])] for j in kept]])
    # New tokens: the target's own logits at the drafter's state under the target's output norm.
    g_t, g_d = target.w("output_norm"), old.norm.weight.detach()
    want = (x_new * (g_t / g_d)) @ target.lm_head[torch.as_tensor(used[fresh])].T
    torch.testing.assert_close(lg_new[..., fresh], want, rtol=1e-4, atol=1e-4)


def test_target_init_of_an_untrained_head_is_trainings_init(target, data):  # noqa: F811
    # A drafter started as training starts it (cli._new_drafter), moved to another vocabulary, has the
    # head a fresh start on that vocabulary would have: for "target", and for "mapped" (the map is the identity).
    used_old, _ = choose_draft_vocab(data.assistant_counts(V), 80)  # >= H + 1 rows: the map is determined
    used_new = _other_vocab(used_old, 80, seed=2)
    torch.manual_seed(0)
    old = _new_drafter(target, used_old, FF)
    want = _new_drafter(target, used_new, FF).lm_head.weight
    for init, tol in (("target", 1e-6), ("mapped", 1e-4)):  # mapped: a least-squares fit with a tiny ridge
        new, info = transplant_for_target(old, used_new, target, init=init)
        assert info["init"] == init
        torch.testing.assert_close(new.lm_head.weight, want, rtol=tol, atol=tol)


def test_mapped_init_recovers_an_affine_map_of_the_target_rows(target, data):  # noqa: F811
    used_old, _ = choose_draft_vocab(data.assistant_counts(V), 80)
    used_new = _other_vocab(used_old, 80, seed=3)
    old = _perturbed(_drafter(target, data, vd=80))
    g = torch.Generator().manual_seed(4)
    R, c = torch.randn(H, H, generator=g) / H ** 0.5, torch.randn(H, generator=g)
    rows = lambda ids: (target.lm_head[torch.as_tensor(ids)] * (target.w("output_norm") / old.norm.weight.detach())) @ R + c  # noqa: E731
    with torch.no_grad():
        old.set_vocab(torch.as_tensor(used_old))
        old.lm_head.weight.copy_(rows(used_old))
    new, info = transplant_vocab(old, used_new, target.lm_head, target.w("output_norm"))
    assert info["init"] == "mapped" and info["fit_relative_residual"] < 1e-4
    torch.testing.assert_close(new.lm_head.weight, rows(used_new), rtol=1e-4, atol=1e-4)
    # Too few old rows to fit the map: the target init is used.
    small = _perturbed(_drafter(target, data, vd=40))
    _, info = transplant_vocab(small, _other_vocab(small.draft_ids().numpy(), 40), target.lm_head, target.w("output_norm"))
    assert info["init"] == "target"


def test_bad_vocabularies_are_clear_errors(target, data):  # noqa: F811
    d = _drafter(target, data, vd=48)
    for used, msg in (([], "empty"), ([5, 3, 9], "ascending"), ([3, 3, 4], "ascending"), ([1, V], r"0\.\.")):
        with pytest.raises(ValueError, match=r"\[train\] transplant.*" + msg):
            transplant_for_target(d, used, target)
    with pytest.raises(ValueError, match="init must be"):
        transplant_for_target(d, [1, 2], target, init="zeros")


def test_cli_transplant_loads_in_the_engine_and_speculative_greedy_equals_plain(tmp_path, tiny_gguf, target, data):  # noqa: F811
    from eyas import _core

    if not hasattr(_core, "speculative") or not hasattr(_core.speculative, "Eagle3Drafter"):
        pytest.skip("this build has no C++ EAGLE-3 drafter")
    from eyas.drafters.eagle3 import load_eagle3
    from eyas.generation import plain_steps
    from eyas.loaders import load_model
    from eyas.sampling import SamplingParams
    from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy

    # An old drafter over a vocabulary that misses some of the data's tokens.
    old = _perturbed(_drafter(target, data, vd=48))
    counts = data.assistant_counts(V)
    worst = np.argsort(counts, kind="stable")[:48]
    with torch.no_grad():
        old.set_vocab(torch.as_tensor(np.sort(worst)))
    save_drafter(old, tmp_path / "old", "float32")
    data.save(str(tmp_path / "d.npz"))
    log = tmp_path / "t.jsonl"
    train_main(["transplant", "--gguf", str(tiny_gguf), "--drafter", str(tmp_path / "old"), "--data",
                str(tmp_path / "d.npz"), "--out", str(tmp_path / "new"), "--dtype", "float32", "--log", str(log)])
    info = json.loads(log.read_text().splitlines()[-1])["transplant"]
    assert info["draft_vocab_size"] == 48 and info["coverage_after"] > info["coverage_before"]
    new = load_drafter(tmp_path / "new", target.embed)
    assert torch.equal(new.draft_ids(), torch.as_tensor(choose_draft_vocab(counts, 48)[0]))
    cfg = json.loads((tmp_path / "new" / "config.json").read_text())
    assert cfg["draft_vocab_size"] == 48 and cfg["eyas"]["transplant"]["coverage_after"] == info["coverage_after"]

    lm = load_model(tiny_gguf)
    drafter = load_eagle3(tmp_path / "new", lm.spec, lm.weights, "f32")
    assert np.array_equal(drafter.d2t, new.draft_ids().numpy())
    plain_t = _core.Transformer(lm.spec, lm.weights, max_context=256, aux_layers=drafter.aux_layers)
    spec_t = _core.Transformer(lm.spec, lm.weights, max_context=256, aux_layers=drafter.aux_layers)
    for i in (0, 7, 19):
        prompt = [int(t) for t in data.seq(i)[: data.prompt_lens[i]]]
        want = []
        for toks in plain_steps(plain_t, prompt, SamplingParams()):
            want += toks
            if len(want) >= 24:
                break
        for policy in (TreePolicy.chain(3), TreePolicy(4, 4, 12)):
            got, steps = [], SpeculativeGenerator(spec_t, Eagle3Proposer(drafter), policy).steps(prompt, SamplingParams())
            for toks in steps:
                got += toks
                if len(got) >= 24:
                    steps.close()
                    break
            assert got[:24] == want[:24], (i, policy)
