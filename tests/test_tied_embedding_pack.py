"""A tied token embedding reads its rows back from the head's repack (cpu::existing_weight_pack,
quant::gguf_row_from_pack) once matmuls have built it: the file pages under the table leave the resident
set then (page_out), and a row read from them would fault back in from the file. The rows must be the
file's, bit for bit, for every packed type, and rows past the last 16-row group still come from the file."""

import numpy as np
import pytest

from eyas import _core
from eyas.loaders import load_model
from tests import quant_ref as qr
from tests.fixtures import tiny_models

# 256 wide, so the K-quants' 256-element blocks fit; 300 rows: 18 groups of 16 packed, 12 rows past them.
CONFIG = dict(tiny_models.LLAMA_CONFIG, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
              num_hidden_layers=1, intermediate_size=256)


def tied_tensors(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    V, H, I = tiny_models.VOCAB, CONFIG["hidden_size"], CONFIG["intermediate_size"]
    q, kv = CONFIG["num_attention_heads"] * CONFIG["head_dim"], CONFIG["num_key_value_heads"] * CONFIG["head_dim"]
    shapes = {"token_embd.weight": (V, H), "output_norm.weight": (H,), "blk.0.attn_norm.weight": (H,),
              "blk.0.ffn_norm.weight": (H,), "blk.0.attn_q.weight": (q, H), "blk.0.attn_k.weight": (kv, H),
              "blk.0.attn_v.weight": (kv, H), "blk.0.attn_output.weight": (H, q), "blk.0.ffn_gate.weight": (I, H),
              "blk.0.ffn_up.weight": (I, H), "blk.0.ffn_down.weight": (H, I)}  # no output.weight: tied
    return {k: (1 + 0.3 * rng.standard_normal(s) if len(s) == 1 else 0.3 * rng.standard_normal(s)).astype(np.float32)
            for k, s in shapes.items()}


def write_tied_gguf(path, qtype: str, monkeypatch):
    """The tiny tied llama in `qtype`; K-quant matrices as random valid blocks (gguf-py cannot quantize them)."""
    if qtype in qr.K_TYPES:
        import gguf

        rng = np.random.default_rng(5)

        def random_blocks(t, qt):
            return qr.random_weights(rng, qtype, t.shape[0], t.shape[1])

        monkeypatch.setattr(gguf.quants, "quantize", random_blocks)
    return tiny_models.write_gguf(path, "llama", tied_tensors(3), CONFIG, qtype)


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q6_K", "Q4_K"])
def test_tied_embedding_rows_from_the_heads_pack_equal_the_files(tmp_path, qtype, monkeypatch):
    path = write_tied_gguf(tmp_path / f"tied.{qtype}.gguf", qtype, monkeypatch)
    loaded = load_model(path)
    assert loaded.spec["tie_embeddings"]
    m = _core.Transformer(loaded.spec, loaded.weights, max_context=512, aux_layers=[0])
    ids = np.random.default_rng(0).permutation(tiny_models.VOCAB).astype(np.int32)  # every row, 12 past the groups

    def embedded() -> np.ndarray:  # aux layer 0: the residual stream entering layer 0, the embedding rows
        return m.forward(ids, logits="none", capture_aux=True)["aux"]

    from_file = embedded()  # the embedding runs before this first forward's matmuls: no repack yet
    m.forward(ids[:2], logits="last"), m.forward(ids[:1], logits="last")  # the head's matmuls build its repack
    before = _core.ops._embedding_rows_from_packs()
    again = embedded()
    read_from_pack = _core.ops._embedding_rows_from_packs() - before
    assert np.array_equal(again.view(np.uint32), from_file.view(np.uint32))
    packed = int((ids < tiny_models.VOCAB // 16 * 16).sum())
    if _core.ops.get_isa() == "scalar" or qtype in ("Q4_K",):  # no repack there, or one that keeps no GGUF bytes
        assert read_from_pack == 0
    else:
        assert read_from_pack == packed  # only the rows of whole 16-row groups; the rest from the file
    # Another Buffer over the same bytes (as a drafter wraps the target's tied table) finds the same pack.
    table, wtype, shape = loaded.weights["token_embd"]
    before = _core.ops._embedding_rows_from_packs()
    rows = np.asarray(_core.ops.embedding(table, wtype, list(shape), ids))
    assert np.array_equal(rows.view(np.uint32), from_file.view(np.uint32))
    assert _core.ops._embedding_rows_from_packs() - before == read_from_pack
    del m  # the pack dies with the model's buffer: a later wrapping reads the file again
    before = _core.ops._embedding_rows_from_packs()
    assert np.array_equal(np.asarray(_core.ops.embedding(table, wtype, list(shape), ids)).view(np.uint32),
                          from_file.view(np.uint32))
    assert _core.ops._embedding_rows_from_packs() == before
