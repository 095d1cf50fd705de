"""Drafters stored with matrices in GGML blocks (`eyas train-drafter pack`, safetensors_mmap.write_blocks):
the engine's Q8_0 runtime weights are the same bytes whether a drafter was stored in half precision or
packed, a 4-bit pack runs as stored, vectors and integer tensors pass through unchanged, and malformed
block entries fail clearly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eyas.drafters.eagle3 import convert_matrix
from eyas.loaders.dtypes import GGMLType
from eyas.loaders.safetensors_mmap import BLOCK_TYPES, block_key, read_tensors, write_blocks

Q8_0, Q8_0_KEY = int(GGMLType.Q8_0), block_key("Q8_0")


def _write(path, tensors, metadata=None):
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata=metadata or {"format": "np"})


def test_pack_keeps_vectors_and_ints_and_quantizes_matrices(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((48, 96)).astype(np.float16)
    odd = rng.standard_normal((8, 40)).astype(np.float32)  # columns not a multiple of 32: stays float
    norm = rng.standard_normal(96).astype(np.float16)
    d2t = np.arange(48, dtype=np.int64)
    wide = np.linspace(0, 1, 7)  # F64 vector: stored (and reported) as F32
    _write(tmp_path / "a.safetensors", {"w": w, "odd": odd, "norm": norm, "d2t": d2t, "wide": wide})
    stored = write_blocks(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert stored == {"w": "Q8_0", "odd": "F32", "norm": "F16", "d2t": "I64", "wide": "F32"}
    t = read_tensors(tmp_path / "b.safetensors")
    assert t["w"].dtype == "Q8_0" and t["w"].shape == [48, 96]
    raw, type_id, shape = t["w"].weight()
    assert type_id == Q8_0 and shape == [48, 96] and raw.shape == (48, 96 // 32 * 34)
    # Dequantized within Q8_0's error: half a step of each block's scale, plus the scale's own
    # rounding to half precision (2^-11 relative) times the largest code, 127.
    err = np.abs(t["w"].numpy() - w.astype(np.float32))
    step = np.abs(w.astype(np.float32)).reshape(48, 3, 32).max(-1, keepdims=True) / 127
    assert (err.reshape(48, 3, 32) <= step * (0.5 + 127 * 2.0**-11) + 1e-6).all()
    np.testing.assert_array_equal(t["norm"].numpy(), norm.astype(np.float32))
    np.testing.assert_array_equal(t["odd"].numpy(), odd)
    np.testing.assert_array_equal(t["d2t"].numpy(), d2t)
    assert t["wide"].dtype == "F32"
    np.testing.assert_array_equal(t["wide"].numpy(), wide.astype(np.float32))


def test_runtime_weights_unchanged_by_packing_and_packing_is_idempotent(tmp_path):
    rng = np.random.default_rng(1)
    # Drafter-like matrices in half precision, some with outlier columns (the scales differ per block).
    mats = {f"m{i}": (rng.standard_normal(shape) * rng.choice([0.01, 1.0, 30.0], shape[1])).astype(np.float16)
            for i, shape in enumerate([(64, 576), (96, 1728), (32, 64)])}
    _write(tmp_path / "f16.safetensors", mats)
    write_blocks(tmp_path / "f16.safetensors", tmp_path / "q8.safetensors")
    write_blocks(tmp_path / "q8.safetensors", tmp_path / "q8_again.safetensors")
    before, after = read_tensors(tmp_path / "f16.safetensors"), read_tensors(tmp_path / "q8.safetensors")
    again = read_tensors(tmp_path / "q8_again.safetensors")
    for name in mats:
        raw_a, type_a, shape_a = convert_matrix(before[name], "q8_0")  # quantized at load
        raw_b, type_b, shape_b = convert_matrix(after[name], "q8_0")  # stored quantized
        assert (type_a, shape_a) == (type_b, shape_b) == (Q8_0, list(mats[name].shape))
        assert np.array_equal(np.asarray(raw_a).reshape(-1), np.asarray(raw_b).reshape(-1)), name
        assert np.array_equal(np.asarray(again[name].weight()[0]), np.asarray(raw_b)), name
    assert (tmp_path / "q8.safetensors").stat().st_size < 0.6 * (tmp_path / "f16.safetensors").stat().st_size


def test_bundled_drafters_load_and_are_stored_packed():
    from eyas.loaders import load_model
    from eyas.models.default import default_model_path
    from eyas.speculative.loading import bundled_drafter_for

    spec = load_model(default_model_path()).spec
    for family in ("eagle3", "hydra"):
        folder = bundled_drafter_for(spec, family)
        assert folder is not None, family
        kinds = {t.dtype for t in read_tensors(next(folder.glob("*.safetensors"))).values()}
        assert "Q8_0" in kinds and "F32" not in kinds, (family, kinds)


def test_malformed_q8_0_entries_fail_clearly(tmp_path):
    blocks = np.zeros((4, 34), np.uint8)
    _write(tmp_path / "short.safetensors", {"w": blocks}, {Q8_0_KEY: json.dumps({"w": [4, 64]})})
    with pytest.raises(ValueError, match="is not Q8_0 data"):
        read_tensors(tmp_path / "short.safetensors")
    _write(tmp_path / "cols.safetensors", {"w": blocks}, {Q8_0_KEY: json.dumps({"w": [4, 30]})})
    with pytest.raises(ValueError, match="multiple of 32"):
        read_tensors(tmp_path / "cols.safetensors")
    _write(tmp_path / "json.safetensors", {"w": blocks}, {Q8_0_KEY: "{not json"})
    with pytest.raises(ValueError, match="not a JSON object"):
        read_tensors(tmp_path / "json.safetensors")


@pytest.mark.parametrize("kind", [k for k in BLOCK_TYPES if k != "Q8_0"])
def test_pack_in_other_block_types_is_read_and_run_as_stored(tmp_path, kind):
    from gguf import quants

    rng = np.random.default_rng(2)
    w = rng.standard_normal((40, 128)).astype(np.float16)
    _write(tmp_path / "a.safetensors", {"w": w, "norm": w[0]})
    assert write_blocks(tmp_path / "a.safetensors", tmp_path / "b.safetensors", kind) == {"w": kind, "norm": "F16"}
    t = read_tensors(tmp_path / "b.safetensors")["w"]
    assert t.dtype == kind and t.shape == [40, 128]
    expected = quants.quantize(w.astype(np.float32), GGMLType[kind])
    raw, type_id, shape = convert_matrix(t, "q8_0")  # the default load keeps the stored blocks
    assert type_id == int(GGMLType[kind]) and shape == [40, 128]
    np.testing.assert_array_equal(np.asarray(raw).reshape(-1), expected.reshape(-1))
    np.testing.assert_array_equal(t.numpy(), quants.dequantize(expected, GGMLType[kind]).reshape(40, 128))
    # Packing again in the same type keeps the blocks; another type quantizes their values again.
    write_blocks(tmp_path / "b.safetensors", tmp_path / "c.safetensors", kind)
    np.testing.assert_array_equal(read_tensors(tmp_path / "c.safetensors")["w"].weight()[0], t.weight()[0])
    write_blocks(tmp_path / "b.safetensors", tmp_path / "d.safetensors", "Q8_0")
    again = quants.quantize(t.numpy(), GGMLType.Q8_0)
    np.testing.assert_array_equal(read_tensors(tmp_path / "d.safetensors")["w"].weight()[0].reshape(-1), again.reshape(-1))


def test_tensor_listed_under_two_block_types_fails(tmp_path):
    blocks = np.zeros((4, 36), np.uint8)
    meta = {block_key("Q4_0"): json.dumps({"w": [4, 64]}), block_key("Q4_1"): json.dumps({"w": [4, 64]})}
    _write(tmp_path / "two.safetensors", {"w": blocks}, meta)
    with pytest.raises(ValueError, match="listed under two block types"):
        read_tensors(tmp_path / "two.safetensors")
    with pytest.raises(ValueError, match="block type must be one of"):
        write_blocks(tmp_path / "two.safetensors", tmp_path / "x.safetensors", "Q2_K")


def test_drafter_packed_in_four_bits_drafts_exactly(tmp_path):
    """The bundled drafter packed as Q4_0 loads with Q4_0 matrices, and greedy speculative output is plain's."""
    import eyas
    from eyas.loaders import load_model
    from eyas.models.default import default_model_path
    from eyas.speculative.loading import bundled_drafter_for
    from eyas.train.cli import main as train_main

    spec = load_model(default_model_path()).spec
    folder = bundled_drafter_for(spec, "eagle3")
    out = tmp_path / "q4"
    train_main(["pack", str(folder), "--out", str(out), "--type", "q4_0"])
    m = eyas.load(drafter=str(out), threads=2)
    # The drafter's own matrices (token_embd is the target's, shared).
    kinds = {v[1] for k, v in m.proposer.drafter.weights.items() if k != "token_embd" and len(v[2]) == 2}
    assert kinds == {int(GGMLType.Q4_0)}, kinds
    prompt = "Explain what a hash table is."
    drafted = m.generate(prompt, chat=True, max_tokens=40)
    plain = eyas.load(drafter="none", threads=2).generate(prompt, chat=True, max_tokens=40)
    assert drafted.tokens == plain.tokens
    assert drafted.metrics["num_accepted_tokens"] > 0
