"""Weights the engine stops reading (a mapped file's bytes after their repack or fused copy was
built) leave the resident set: csrc/core/page_out.h. The bytes stay the same, and a model built
from a mapped GGUF gives the same output as one whose weights live in ordinary memory."""

import sys

import numpy as np
import pytest

from eyas import _core


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.skipif(sys.platform != "linux", reason="the resident set is read from /proc")
def test_paged_out_file_pages_leave_the_resident_set_and_read_back_the_same(tmp_path):
    data = np.random.default_rng(0).integers(0, 255, 32 << 20, dtype=np.uint8)
    path = tmp_path / "w.bin"
    data.tofile(path)
    mapped = np.memmap(path, mode="r")
    assert int(mapped[::4096].sum()) == int(data[::4096].sum())  # every page touched
    before = _rss_mb()
    _core._page_out(mapped)
    dropped = before - _rss_mb()
    assert dropped > 16, f"only {dropped:.1f} MB of 32 left the resident set"
    assert np.array_equal(mapped, data)


def test_a_mapped_model_equals_one_in_ordinary_memory(tmp_path):
    from eyas.loaders import load_model
    from tests.fixtures import tiny_models

    path = tiny_models.write_gguf(tmp_path / "m.gguf", "llama", tiny_models.random_llama_tensors(3),
                                  tiny_models.LLAMA_CONFIG, "Q4_0")
    loaded = load_model(path)
    copied = {k: (np.array(v[0], copy=True), *v[1:]) for k, v in loaded.weights.items()}
    outs = []
    for weights in (loaded.weights, copied):
        m = _core.Transformer(loaded.spec, weights, max_context=32)
        r = m.forward(np.arange(1, 9, dtype=np.int32), logits="all")
        m.commit(list(range(8)))
        outs.append((r["logits"], m.decode(9)["logits"], m.decode(10)["logits"]))
    for a, b in zip(*outs):
        assert np.array_equal(a, b)
