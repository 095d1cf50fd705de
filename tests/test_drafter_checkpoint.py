"""Drafter checkpoints: round trips in the SpecForge, EAGLE and vLLM speculators layouts, d2t and aux
id conventions, and every load-time mismatch with the target as a clear ValueError."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from eyas import _core
from eyas.drafters import load_eagle3
from eyas.drafters.eagle3 import draft_to_target
from eyas.speculative import load_drafter
from tests.parity.cases_speculative import build, random_checkpoint, tiny_target, write_checkpoint

SPEC, CORE, _ = tiny_target()  # 6 layers, vocab 96, hidden 64


def run(d, seed=0):
    rng = np.random.default_rng(seed)
    aux = rng.standard_normal((5, 3 * SPEC["hidden_size"])).astype(np.float32)
    tokens = rng.integers(0, SPEC["vocab_size"], 5).astype(np.int32)
    rt = _core.speculative.Eagle3Drafter(d.spec, d.weights, d.d2t, max_context=32)
    rt.ingest(aux, tokens)
    return rt.last_logits


@pytest.mark.parametrize("layout", ["specforge", "eagle", "speculators"])
@pytest.mark.parametrize("kw", [dict(draft_vocab=40), dict(hidden=32, heads=2, kv_heads=1, own_embed=True, fc_bias=True)])
def test_round_trip(tmp_path, layout, kw):
    cfg, t = random_checkpoint(1, SPEC, **kw)
    direct = build(SPEC, CORE, cfg, t)
    loaded = load_eagle3(write_checkpoint(tmp_path / layout, cfg, t, layout=layout), SPEC, CORE, "f32")
    assert loaded.config.layout == layout
    assert loaded.feature_layers == loaded.aux_layers == [2, 3, 3]
    assert loaded.shares_embedding == ("embed_tokens.weight" not in t)
    assert not loaded.config.norm_before_residual
    np.testing.assert_array_equal(loaded.d2t, direct.d2t)
    assert np.array_equal(run(loaded).view(np.uint32), run(direct).view(np.uint32))


@pytest.mark.parametrize("dtype,weight_type,code,tol", [("F16", "keep", 1, 2e-2), ("BF16", "keep", 30, 1e-1),
                                                        ("F16", "q8_0", 8, 5e-2), ("BF16", "f32", 0, 1e-1)])
def test_half_precision_weights(tmp_path, dtype, weight_type, code, tol):
    cfg, t = random_checkpoint(2, SPEC, draft_vocab=40)
    loaded = load_eagle3(write_checkpoint(tmp_path, cfg, t, dtype=dtype), SPEC, CORE, weight_type)
    assert loaded.weights["attn_q"][1] == code and loaded.weights["hidden_norm"][1] == 0
    loaded.spec["rescore_rows"] = 0  # every logit from the converted head (test_draft_head_rescore has the copy)
    ref = run(build(SPEC, CORE, cfg, t))
    np.testing.assert_allclose(run(loaded), ref, atol=tol * np.abs(ref).max())


def test_speculators_default_norm_before_residual(tmp_path):
    cfg, t = random_checkpoint(3, SPEC)
    folder = write_checkpoint(tmp_path, cfg, t, layout="speculators")
    c = json.loads((folder / "config.json").read_text())
    del c["norm_before_residual"]  # vLLM's default for this format is True
    (folder / "config.json").write_text(json.dumps(c))
    d = load_eagle3(folder, SPEC, CORE, "f32")
    assert d.config.norm_before_residual and d.spec["norm_before_residual"]
    plain = build(SPEC, CORE, cfg, t)
    assert not np.array_equal(run(d), run(plain))  # the flag changes the forward


def test_sglang_style_aux_ids_are_shifted(tmp_path):
    cfg, t = random_checkpoint(4, SPEC)
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [1, 2, 2]  # output-of-layer ids
    assert load_eagle3(write_checkpoint(tmp_path, cfg, t), SPEC, CORE).feature_layers == [2, 3, 3]
    del cfg["eagle_config"]
    assert load_eagle3(write_checkpoint(tmp_path, cfg, t), SPEC, CORE).feature_layers == [2, 3, 3]  # default


def test_d2t_variants():
    used = np.array([3, 5, 6, 20], np.int64)
    offsets = used - np.arange(4)
    assert draft_to_target(offsets, 4, 30).tolist() == used.tolist()
    # Absolute ids (llama.cpp style): as offsets they would leave the vocabulary.
    assert draft_to_target(np.array([3, 5, 26, 29]), 4, 30).tolist() == [3, 5, 26, 29]
    assert draft_to_target(None, 30, 30) is None
    assert draft_to_target(np.zeros(30, np.int64), 30, 30) is None  # placeholder = identity
    with pytest.raises(ValueError, match=r"\[drafter\].*outside"):
        draft_to_target(np.array([3, 5, 40, 41]), 4, 30)
    with pytest.raises(ValueError, match=r"\[drafter\].*same target token"):
        draft_to_target(np.array([3, 2, 5, 6]), 4, 30)  # offsets: ids 3, 3, 7, 9
    with pytest.raises(ValueError, match=r"\[drafter\].*no d2t"):
        draft_to_target(None, 4, 30)


def mutate(tmp_path, change_cfg=None, change_t=None, **kw):
    cfg, t = random_checkpoint(5, SPEC, **kw)
    if change_cfg:
        change_cfg(cfg)
    if change_t:
        change_t(t)
    return write_checkpoint(tmp_path, cfg, t)


@pytest.mark.parametrize("name,cfg_fn,t_fn,kw,msg", [
    ("target hidden", lambda c: c.update(target_hidden_size=32), None, {}, "target hidden size 32"),
    ("vocab", lambda c: c.update(vocab_size=100), None, {}, "vocabulary of 100"),
    ("aux range", lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[2, 3, 6]), None, {},
     "out of range"),
    ("aux count", lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[2, 3]), None, {}, "aux layers"),
    ("layers", lambda c: c.update(num_hidden_layers=2), None, {}, "1-layer"),
    ("fc_norm", lambda c: c.update(fc_norm=True), None, {}, "fc_norm"),
    ("single hidden", lambda c: c["eagle_config"].update(use_aux_hidden_state=False), None, {}, "use_aux_hidden_state"),
    ("act", lambda c: c.update(hidden_act="gelu"), None, {}, "silu"),
    ("missing", None, lambda t: t.pop("midlayer.self_attn.q_proj.weight"), {}, "attn_q"),
    ("shape", None, lambda t: t.update({"norm.weight": np.ones(7, np.float32)}), {}, "output_norm"),
    ("unexpected", None, lambda t: t.update({"midlayer.extra.weight": np.ones(3, np.float32)}), {}, "unexpected"),
    ("no embed", None, lambda t: t.pop("embed_tokens.weight"), dict(hidden=32, heads=2, kv_heads=1, own_embed=True),
     "no embed_tokens"),
    ("draft vocab", lambda c: c.update(draft_vocab_size=12), None, dict(draft_vocab=40), "draft_vocab_size"),
    ("d2t", None, lambda t: t.update(d2t=np.full(40, 500, np.int64)), dict(draft_vocab=40), "outside"),
])
def test_load_time_mismatches(tmp_path, name, cfg_fn, t_fn, kw, msg):
    folder = mutate(tmp_path, cfg_fn, t_fn, **kw)
    with pytest.raises(ValueError, match=rf"\[drafter\].*{msg}"):
        load_eagle3(folder, SPEC, CORE)


def test_bad_weight_type(tmp_path):
    cfg, t = random_checkpoint(7, SPEC)
    with pytest.raises(ValueError, match=r"\[drafter\].*weight_type"):
        load_eagle3(write_checkpoint(tmp_path, cfg, t), SPEC, CORE, "int3")


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match=r"\[drafter\].*no such"):
        load_eagle3(tmp_path / "nope", SPEC, CORE)
    (tmp_path / "a").mkdir()
    with pytest.raises(ValueError, match=r"\[drafter\].*config.json"):
        load_eagle3(tmp_path / "a", SPEC, CORE)
    folder = mutate(tmp_path / "b")
    st = folder / "model.safetensors"
    st.write_bytes(st.read_bytes()[:-100])
    with pytest.raises(ValueError, match=r"\[drafter\].*truncated"):
        load_eagle3(folder, SPEC, CORE)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"\[drafter\].*JSON"):
        load_eagle3(folder, SPEC, CORE)


def test_load_drafter_entry_point(tmp_path):
    class Loaded:
        spec, weights = SPEC, CORE

    assert load_drafter("none", Loaded) is None and load_drafter(None, Loaded) is None
    cfg, t = random_checkpoint(6, SPEC)
    d = load_drafter(str(write_checkpoint(tmp_path, cfg, t)), Loaded)
    assert load_drafter(d, Loaded) is d
    assert load_drafter("default", Loaded) is None  # nothing bundled fits this toy target


def test_eagle_pytorch_bin(tmp_path):
    torch = pytest.importorskip("torch")
    cfg, t = random_checkpoint(8, SPEC, draft_vocab=40)
    folder = tmp_path / "eagle_bin"
    folder.mkdir()
    cfg["architectures"] = ["LlamaForCausalLM"]
    (folder / "config.json").write_text(json.dumps(cfg))
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in t.items()}
    sd["midlayer.self_attn.q_proj.weight"] = sd["midlayer.self_attn.q_proj.weight"].to(torch.bfloat16)
    sd["midlayer.self_attn.rotary_emb.inv_freq"] = torch.ones(8)  # a buffer EAGLE's pickles carry: ignored
    torch.save(sd, folder / "pytorch_model.bin")
    d = load_eagle3(folder, SPEC, CORE, "keep")
    assert d.config.layout == "eagle" and d.weights["attn_q"][1] == 30
    ref = run(build(SPEC, CORE, cfg, t))
    np.testing.assert_allclose(run(d), ref, atol=0.1 * np.abs(ref).max())


def test_recommended_tree_policy(tmp_path):
    """The drafter keeps config.json's raw triple; its proposer turns it into a checked TreePolicy."""
    from eyas.speculative import Eagle3Proposer, TreePolicy

    cfg, t = random_checkpoint(9, SPEC)
    d = load_eagle3(write_checkpoint(tmp_path / "a", cfg, t), SPEC, CORE)
    assert d.tree_policy is None and Eagle3Proposer(d).policy is None
    cfg["eyas"] = {"tree_policy": [1, 4, 5]}
    d = load_eagle3(write_checkpoint(tmp_path / "b", cfg, t), SPEC, CORE)
    assert d.tree_policy == (1, 4, 5) and Eagle3Proposer(d).policy == TreePolicy(1, 4, 5)
    cfg["eyas"] = {"tree_policy": [0, 4, 5]}
    d = load_eagle3(write_checkpoint(tmp_path / "c", cfg, t), SPEC, CORE)
    with pytest.raises(ValueError, match=r"\[speculative\].*top_k"):
        Eagle3Proposer(d)
    cfg["eyas"] = {"tree_policy": [1, 4]}
    with pytest.raises(ValueError, match=r"\[drafter\].*tree_policy"):
        load_eagle3(write_checkpoint(tmp_path / "d", cfg, t), SPEC, CORE)


def test_drafters_do_not_import_the_speculative_engine():
    """Layering: checkpoint readers (eyas.drafters) sit below eyas.speculative, which builds on them."""
    import eyas.drafters

    folder = Path(eyas.drafters.__file__).parent
    imports = re.compile(r"^\s*(from|import)\s+eyas\.speculative\b", re.M)
    offenders = [p.name for p in folder.glob("*.py") if imports.search(p.read_text(encoding="utf-8"))]
    assert not offenders
