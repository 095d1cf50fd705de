"""The target's own multi-token-prediction (MTP) block as a drafter, on tiny random Qwen3.5 / Qwen3-Next
targets with a random MTP block: loading it from HF folders (mtp.*) and GGUF files (nextn blocks), its
forward and tree expansion against a torch reference built from transformers' own decoder layer, greedy
speculative decoding with it bit-identical to plain decoding, and clear errors without one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from eyas import _core  # noqa: E402
from eyas.drafters.mtp import mtp_head  # noqa: E402
from eyas.generation import plain_steps  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402
from eyas.speculative import MtpProposer, SpeculativeGenerator, TreePolicy  # noqa: E402
from tests.fixtures import tiny_qwen35  # noqa: E402
from tests.test_speculative_greedy import take as _take  # noqa: E402

i32 = np.int32
FFN = {"dense": "dense_ffn", "moe": "moe_ffn", "next": "moe_ffn"}


@pytest.fixture(scope="module", params=["dense", "moe", "next"])
def built(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("q35mtp") / request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tiny_qwen35.make_hf(request.param, folder)
    mtp = tiny_qwen35.make_mtp(model, folder)
    return {"variant": request.param, "model": model, "mtp": mtp, "folder": folder, "loaded": load_model(folder)}


def _pairs(seed, T, H):
    """T random (target final residual, next token) pairs."""
    rng = np.random.default_rng(seed)
    return (2.0 * rng.standard_normal((T, H))).astype(np.float32), rng.integers(0, tiny_qwen35.VOCAB, T).astype(i32)


def _normed(model, residual):
    import torch

    with torch.no_grad():
        return model.model.norm(torch.as_tensor(residual)).numpy()


def test_loading_keeps_the_mtp_block_as_block_L(built):
    spec, weights = built["loaded"].spec, built["loaded"].weights
    L = spec["num_layers"]
    assert spec["mtp_layers"] == [{"mixer": "attention", "ffn": FFN[built["variant"]]}]
    for name in ("nextn.eh_proj", "nextn.enorm", "nextn.hnorm", "nextn.shared_head_norm", "attn_q", "ffn_norm"):
        assert f"blk.{L}.{name}" in weights
    # The (1 + w) norms are folded as the trunk's are.
    np.testing.assert_array_equal(weights[f"blk.{L}.nextn.enorm"][0],
                                  1.0 + built["mtp"].pre_fc_norm_embedding.weight.detach().numpy())


def test_a_model_without_mtp_tensors_has_no_mtp_layers(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_hf("dense", tmp_path)
    assert load_model(tmp_path).spec["mtp_layers"] == []


@pytest.mark.parametrize("chunks", [[9], [5, 1, 3]])
def test_mtp_forward_matches_the_torch_reference(built, chunks):
    model, loaded = built["model"], built["loaded"]
    T = sum(chunks)
    residual, tokens = _pairs(T, T, loaded.spec["hidden_size"])
    o_ref, logits_ref = tiny_qwen35.mtp_reference(model, built["mtp"], _normed(model, residual), tokens)
    rt = mtp_head(loaded.spec, loaded.weights).runtime(64)
    rt.reset()
    end = 0
    for n in chunks:
        rt.ingest(residual[end:end + n], tokens[end:end + n])
        end += n
        np.testing.assert_allclose(rt.last_logits, logits_ref[end - 1], rtol=1e-4, atol=2e-4)
        np.testing.assert_allclose(rt.last_hidden, o_ref[end - 1], rtol=1e-4, atol=1e-4)
    assert rt.length == T


def test_chain_expansion_feeds_each_depth_the_previous_output(built):
    """A chain (top_k 1): depth d's token is the argmax of the block run on (o of depth d-1, its token),
    the reference run causally over the ingested pairs and the drafted ones."""
    model, loaded = built["model"], built["loaded"]
    residual, tokens = _pairs(7, 6, loaded.spec["hidden_size"])
    rt = mtp_head(loaded.spec, loaded.weights).runtime(64)
    rt.reset()
    rt.ingest(residual, tokens)
    tree = rt.expand(1, 4, 5)
    assert tree["parents"].tolist() == [-1, 0, 1, 2, 3]
    hidden, toks = list(_normed(model, residual)), list(tokens)
    want = []
    for _ in range(4):
        o, logits = tiny_qwen35.mtp_reference(model, built["mtp"], np.stack(hidden), toks)
        want.append(int(np.argmax(logits[-1])))
        hidden.append(o[-1])
        toks.append(want[-1])
    assert tree["tokens"].tolist() == [int(tokens[-1])] + want
    assert rt.length == 6  # drafting leaves the committed pairs alone


def test_gguf_and_hf_folder_give_the_same_block(built, tmp_path):
    path = tiny_qwen35.write_gguf(tmp_path / "m.gguf", built["model"], mtp=built["mtp"])
    g = load_model(path)
    assert g.spec["mtp_layers"] == built["loaded"].spec["mtp_layers"]
    residual, tokens = _pairs(3, 8, g.spec["hidden_size"])
    out = []
    for m in (g, built["loaded"]):
        rt = mtp_head(m.spec, m.weights).runtime(32)
        rt.reset()
        rt.ingest(residual, tokens)
        out.append((rt.last_logits, rt.expand(2, 3, 6)["tokens"]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-5)
    assert out[0][1].tolist() == out[1][1].tolist()


def test_greedy_speculative_equals_plain_with_the_mtp_block(built):
    loaded = built["loaded"]
    proposer = MtpProposer(mtp_head(loaded.spec, loaded.weights))
    assert proposer.aux_layers == [loaded.spec["num_layers"]]
    plain_t = _core.Transformer(loaded.spec, loaded.weights, max_context=128, aux_layers=proposer.aux_layers)
    spec_t = _core.Transformer(loaded.spec, loaded.weights, max_context=128, aux_layers=proposer.aux_layers)
    rng = np.random.default_rng(0)
    for prompt in (rng.integers(0, tiny_qwen35.VOCAB, n).tolist() for n in (1, 9)):
        want = _take(plain_steps(plain_t, prompt, SamplingParams()), 30)
        for policy in (TreePolicy.chain(3), TreePolicy(2, 3, 6), TreePolicy(4, 4, 12)):
            gen = SpeculativeGenerator(spec_t, proposer, policy)
            assert _take(gen.steps(prompt, SamplingParams()), 30) == want, f"policy {policy}"


def test_the_block_reads_the_targets_captured_final_state(built):
    """What the generator hands the proposer (the target's aux capture at id L, the residual before the
    output norm) gives the reference's logits when the reference is fed the target's normed final state."""
    loaded, model = built["loaded"], built["model"]
    L = loaded.spec["num_layers"]
    prompt = np.random.default_rng(5).integers(0, tiny_qwen35.VOCAB, 7).astype(i32)
    t = _core.Transformer(loaded.spec, loaded.weights, max_context=32, aux_layers=[L])
    out = t.forward(prompt, logits="all", capture_aux=True)
    residual = np.asarray(out["aux"])
    nxt = np.append(prompt[1:], np.argmax(np.asarray(out["logits"])[-1])).astype(i32)
    _, logits_ref = tiny_qwen35.mtp_reference(model, built["mtp"], _normed(model, residual), nxt)
    rt = mtp_head(loaded.spec, loaded.weights).runtime(32)
    rt.reset()
    rt.ingest(residual, nxt)
    np.testing.assert_allclose(rt.last_logits, logits_ref[-1], rtol=1e-4, atol=2e-4)


@pytest.mark.parametrize("source", ["hf", "gguf"])
def test_public_api_with_the_mtp_family(built, tmp_path, source):
    import eyas

    path = built["folder"] if source == "hf" else tiny_qwen35.write_gguf(tmp_path / "t.gguf", built["model"],
                                                                        mtp=built["mtp"])
    model = eyas.load(path, drafter_family="mtp", max_context=128)
    assert isinstance(model.proposer, MtpProposer)
    proposer = model.proposer
    try:
        model.proposer = None
        want = model.generate("hello there", chat=True, max_tokens=20)
    finally:
        model.proposer = proposer
    for tree in (None, "2,3,6"):
        got = model.generate("hello there", chat=True, max_tokens=20, **({"tree": tree} if tree else {}))
        assert got.tokens == want.tokens
        assert got.metrics["num_drafts"] >= 1


def test_mtp_family_on_a_model_without_mtp_layers_is_a_clear_error(tmp_path):
    import eyas

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_hf("dense", tmp_path / "plain")
    with pytest.raises(ValueError, match=r"^\[drafter\] plain has no multi-token-prediction \(MTP\) layers"):
        eyas.load(tmp_path / "plain", drafter_family="mtp")
    assert eyas.load(tmp_path / "plain", drafter_family="mtp", drafter="none").proposer is None


def test_mtp_family_takes_no_checkpoint(built, tmp_path):
    import eyas

    with pytest.raises(ValueError, match=r"^\[drafter\] drafter family 'mtp' drafts with the model's own MTP block"):
        eyas.load(built["folder"], drafter_family="mtp", drafter=str(tmp_path))


def test_cli_generates_with_the_mtp_family_and_refuses_it_without_mtp_layers(built, tmp_path, capsys):
    import json

    from eyas.cli import main

    args = ["generate", "hello there", "--max-tokens", "8", "--json", "--max-context", "64"]
    assert main([*args, "--model", str(built["folder"]), "--drafter-family", "mtp", "--tree", "2,2,4"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["num_drafts"] >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_hf("dense", tmp_path / "plain")
    capsys.readouterr()  # transformers' save progress
    assert main([*args, "--model", str(tmp_path / "plain"), "--drafter-family", "mtp"]) == 2
    assert capsys.readouterr().err.startswith("eyas: error: [drafter] plain has no multi-token-prediction (MTP) layers")


def test_mtp_drafter_checks_its_inputs(built):
    loaded = built["loaded"]
    head = mtp_head(loaded.spec, loaded.weights)
    rt = head.runtime(8)
    rt.reset()
    H = loaded.spec["hidden_size"]
    with pytest.raises(ValueError, match=r"^\[MtpDrafter\] expand needs a preceding ingest"):
        rt.expand(2, 2, 4)
    with pytest.raises(ValueError, match=r"^\[MtpDrafter\] hidden"):
        rt.ingest(np.zeros((2, H + 1), np.float32), np.zeros(2, i32))
    with pytest.raises(ValueError, match=r"^\[MtpDrafter\] token id 300 outside the vocabulary"):
        rt.ingest(np.zeros((1, H), np.float32), np.array([300], i32))
    with pytest.raises(ValueError, match=r"^\[MtpDrafter\] ingest of 9 pairs at length 0 exceeds max_context 8"):
        rt.ingest(np.zeros((9, H), np.float32), np.zeros(9, i32))
    with pytest.raises(ValueError, match=r"^\[Transformer\] unknown layer kind 'gdn_ffn'"):
        _core.speculative.MtpDrafter(loaded.spec, head.weights, block=head.block, ffn="gdn_ffn")
    missing = {k: v for k, v in head.weights.items() if not k.endswith("nextn.hnorm")}
    with pytest.raises(ValueError, match=r"^\[Transformer\] missing weight 'blk.4.nextn.hnorm'"):
        _core.speculative.MtpDrafter(loaded.spec, missing, block=head.block, ffn=head.ffn)


def test_an_mtp_block_without_its_input_projection_is_dropped(built, tmp_path):
    """A checkpoint whose mtp.* lacks fc (no block this drafter can run) still loads: without MTP layers."""
    from safetensors.numpy import load_file, save_file

    folder = tmp_path / "nofc"
    folder.mkdir()
    for f in built["folder"].iterdir():
        if f.name == "mtp.safetensors":
            save_file({k: v for k, v in load_file(f).items() if k != "mtp.fc.weight"}, str(folder / f.name))
        elif f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    m = load_model(folder)
    assert m.spec["mtp_layers"] == [] and not any(k.startswith(f"blk.{m.spec['num_layers']}.") for k in m.weights)
