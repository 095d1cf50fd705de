"""bench/make_shape_gguf.py: the random-weight GGUFs of real shapes load in eyas and decode to finite
logits, Qwen3.5 hybrids included (the speed comparisons against llama.cpp run on these files); shrunken
shapes keep the tests small, the real ones are checked by their tensor lists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eyas import _core
from eyas.loaders import load_model
from tests.fixtures.bench_script import load_bench_script

msg = load_bench_script("make_shape_gguf")


def _tokenizer() -> Path:
    from eyas.models.default import default_model_path

    try:
        return default_model_path()
    except ValueError as e:
        pytest.skip(str(e))


TINY = {
    "llama": msg.Shape("llama", 2, 256, 512, 4, 2, 64, 49152, True, 10000.0),
    "qwen35": msg.Shape("qwen35", 4, 256, 512, 2, 1, 128, 49152, True, 1e7, msg.Gdn(2, 4, 64)),
}


@pytest.mark.parametrize("arch, ftype", [("llama", "Q4_K_M"), ("qwen35", "Q4_K_M"), ("qwen35", "Q8_0")])
def test_a_shrunken_shape_loads_and_decodes(tmp_path, arch, ftype):
    path = tmp_path / f"{arch}-{ftype}.gguf"
    msg.write_gguf(path, TINY[arch], ftype, _tokenizer())
    m = load_model(path)
    t = _core.Transformer(m.spec, m.weights, max_context=16)
    if arch == "qwen35":  # three Gated DeltaNet layers to one attention layer
        assert t.layer_kinds.count("gdn") == 3 and t.layer_kinds.count("attention") == 1
    logits = t.forward(np.array([1, 2, 3], np.int32), logits="all")["logits"]
    assert logits.shape == (3, 49152) and np.isfinite(logits).all()


def test_the_real_qwen35_shapes_have_the_published_sizes():
    s = msg.SHAPES["qwen3.5-0.8b"]
    names = {name: shape for name, shape, _ in msg.tensors(s)}
    assert names["blk.0.attn_qkv.weight"] == ((2 * 16 + 16) * 128, 1024)  # q | k | v of 16/16 heads of 128
    assert names["blk.3.attn_q.weight"] == (2 * 8 * 256, 1024)  # query and gate of 8 heads of 256
    assert "blk.3.attn_qkv.weight" not in names and "blk.4.attn_qkv.weight" in names
    assert names["token_embd.weight"] == (248320, 1024) and "output.weight" not in names  # tied
    assert msg.stored_type("Q4_K_M", "blk.0.ssm_conv1d.weight", (6144, 4), 0, s).name == "F32"
