"""Drafters stored with Q8_0 matrices (`eyas train-drafter pack`, safetensors_mmap.write_q8_0): the
engine's Q8_0 runtime weights are the same bytes whether a drafter was stored in half precision or
packed, vectors and integer tensors pass through unchanged, and malformed Q8_0 entries fail clearly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eyas.drafters.eagle3 import convert_matrix
from eyas.loaders.safetensors_mmap import Q8_0, Q8_0_KEY, read_tensors, write_q8_0
from eyas.speculative.loading import bundled_drafter_for


def _write(path, tensors, metadata=None):
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata=metadata or {"format": "np"})


def test_pack_keeps_vectors_and_ints_and_quantizes_matrices(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((48, 96)).astype(np.float16)
    odd = rng.standard_normal((8, 40)).astype(np.float32)  # columns not a multiple of 32: stays float
    norm = rng.standard_normal(96).astype(np.float16)
    d2t = np.arange(48, dtype=np.int64)
    _write(tmp_path / "a.safetensors", {"w": w, "odd": odd, "norm": norm, "d2t": d2t})
    stored = write_q8_0(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert stored == {"w": "Q8_0", "odd": "F32", "norm": "F16", "d2t": "I64"}
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


def test_bundled_drafter_runtime_weights_unchanged_by_packing(tmp_path):
    import eyas.models.default as default_model
    from eyas.loaders import load_model

    spec = load_model(default_model.default_model_path()).spec
    folder = bundled_drafter_for(spec)
    src = next(folder.glob("*.safetensors"))
    stored = write_q8_0(src, tmp_path / src.name)
    assert sum(v == "Q8_0" for v in stored.values()) >= 5
    before, after = read_tensors(src), read_tensors(tmp_path / src.name)
    for name, kind in stored.items():
        if kind != "Q8_0":
            np.testing.assert_array_equal(before[name].numpy(), after[name].numpy())
            continue
        raw_a, type_a, shape_a = convert_matrix(before[name], "q8_0")
        raw_b, type_b, shape_b = convert_matrix(after[name], "q8_0")
        assert (type_a, shape_a) == (type_b, shape_b) == (Q8_0, before[name].shape)
        assert np.array_equal(np.asarray(raw_a).reshape(-1), np.asarray(raw_b).reshape(-1)), name
    assert (tmp_path / src.name).stat().st_size < 0.6 * src.stat().st_size


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
