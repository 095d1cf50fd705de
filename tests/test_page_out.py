"""Weights the engine stops reading (a mapped file's bytes after their repack or fused copy was
built) leave the resident set: csrc/core/page_out.h. The bytes stay the same, and a model built
from a mapped GGUF gives the same output as one whose weights live in ordinary memory."""

import sys

import numpy as np
import pytest

from eyas import _core


def _rss_mb(field: str = "VmRSS") -> float:
    """A resident-set figure of /proc/self/status, MB: VmRSS (all), RssFile (mapped file pages), ..."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


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


def test_fused_weights_adjacent_in_memory_are_viewed_not_copied(tmp_path):
    """gate|up (and q|k|v) lying back to back, as GGUF files often store ffn_gate then ffn_up, become
    the fused weight with no copy; scattered parts are copied. Both give the same bits."""
    from eyas.loaders import load_model
    from tests.fixtures import tiny_models

    path = tiny_models.write_gguf(tmp_path / "m.gguf", "llama", tiny_models.random_llama_tensors(4),
                                  tiny_models.LLAMA_CONFIG, "Q8_0")
    loaded = load_model(path)
    L = tiny_models.LLAMA_CONFIG["num_hidden_layers"]

    def with_parts_adjacent(adjacent: bool) -> dict:
        w = {k: (np.array(v[0], copy=True), *v[1:]) for k, v in loaded.weights.items()}
        if adjacent:
            for i in range(L):
                for names in ((f"blk.{i}.ffn_gate", f"blk.{i}.ffn_up"),
                              (f"blk.{i}.attn_q", f"blk.{i}.attn_k", f"blk.{i}.attn_v")):
                    stacked = np.concatenate([w[n][0] for n in names])
                    rows = np.cumsum([0] + [w[n][0].shape[0] for n in names])
                    for n, a, b in zip(names, rows[:-1], rows[1:]):
                        w[n] = (stacked[a:b], *w[n][1:])  # views into one array, in fused order
        return w

    outs, copied = [], []
    for adjacent in (True, False):
        weights = with_parts_adjacent(adjacent)
        before = _core._fused_copy_bytes()
        m = _core.Transformer(loaded.spec, weights, max_context=32)
        copied.append(_core._fused_copy_bytes() - before)
        r = m.forward(np.arange(1, 9, dtype=np.int32), logits="all")
        m.commit(list(range(8)))
        outs.append((r["logits"], m.decode(9)["logits"]))
    parts = sum(loaded.weights[f"blk.{i}.{n}"][0].nbytes for i in range(L)
                for n in ("ffn_gate", "ffn_up", "attn_q", "attn_k", "attn_v"))
    assert copied == [0, parts]
    for a, b in zip(*outs):
        assert np.array_equal(a, b)


@pytest.mark.skipif(sys.platform != "linux", reason="the resident set is read from /proc")
def test_a_parsed_gguf_header_leaves_the_resident_set(tmp_path):
    """A large vocabulary's strings are read once into Python objects; the header's mapped pages (8 MB
    here) must not stay resident beside them for the model's lifetime."""
    import gguf

    from eyas.loaders.gguf_file import GGUFFile

    path = tmp_path / "vocab.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    tokens = [f"token-{i:07d}-padding" for i in range(300_000)]  # 21 bytes + an 8-byte length each
    w.add_token_list(tokens)
    w.add_tensor("x", np.zeros(32, np.float32))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file()
    w.close()
    before = _rss_mb("RssFile")
    f = GGUFFile(path)
    grown = _rss_mb("RssFile") - before
    assert f.fields["tokenizer.ggml.tokens"][123_456] == tokens[123_456]
    assert grown < 2, f"{grown:.1f} MB of the parsed header's pages stayed resident"
    assert np.array_equal(f.tensor_bytes(f.tensors[0], 128), np.zeros(128, np.uint8))  # data still reads
