"""Bad input to rope / elementwise / softmax / top-k / attention / kv ops raises a clear [op] ValueError."""

import numpy as np
import pytest

from eyas import _core

ops = _core.ops
f32 = np.float32


def _z(*shape, dtype=f32):
    return np.zeros(shape, dtype)


def _inv(n):
    return np.ones(n, f32)


CASES = {
    # rope
    "rope-x-2d": (lambda: ops.rope(_z(4, 64), _z(4, dtype=np.int32), _inv(32)), "rope", "3 dims"),
    "rope-positions-dtype": (lambda: ops.rope(_z(2, 1, 64), _z(2, dtype=np.int64), _inv(32)), "rope", "I32"),
    "rope-positions-len": (lambda: ops.rope(_z(2, 1, 64), _z(3, dtype=np.int32), _inv(32)), "rope", "positions"),
    "rope-rot-odd": (lambda: ops.rope(_z(2, 1, 64), _z(2, dtype=np.int32), _inv(32), rot_dim=31), "rope", "rot_dim"),
    "rope-rot-too-big": (lambda: ops.rope(_z(2, 1, 64), _z(2, dtype=np.int32), _inv(40)), "rope", "rot_dim"),
    "rope-inv-freq-len": (lambda: ops.rope(_z(2, 1, 64), _z(2, dtype=np.int32), _inv(16), rot_dim=64), "rope",
                          "inv_freq"),
    "rope-out-shape": (lambda: ops.rope(_z(2, 1, 64), _z(2, dtype=np.int32), _inv(32), out=_z(2, 2, 64)), "rope", "y"),
    # elementwise
    "add-shape": (lambda: ops.add(_z(2, 3), _z(3, 2)), "add", "must match"),
    "add-bias-len": (lambda: ops.add(_z(2, 3), _z(4)), "add", "must match"),
    "add-dtype": (lambda: ops.add(_z(2, 3), _z(2, 3, dtype=np.float64)), "add", "unsupported numpy dtype"),
    "add-int": (lambda: ops.add(_z(2, 3, dtype=np.int32), _z(2, 3, dtype=np.int32)), "add", "F32"),
    "silu-shape": (lambda: ops.silu_mul(_z(2, 3), _z(2, 4)), "silu_mul", "must match"),
    "silu-out": (lambda: ops.silu_mul(_z(2, 3), _z(2, 3), out=_z(6)), "silu_mul", "must match"),
    "silu-halves-odd": (lambda: ops.silu_mul_halves(_z(2, 5)), "silu_mul_halves", "2I"),
    "silu-halves-3d": (lambda: ops.silu_mul_halves(_z(2, 2, 4)), "silu_mul_halves", "2I"),
    "silu-halves-out": (lambda: ops.silu_mul_halves(_z(2, 8), out=_z(2, 8)), "silu_mul_halves", "y F32.2, 8. must be"),
    "silu-halves-overlap": (lambda: (lambda buf: ops.silu_mul_halves(buf[:16].reshape(2, 8), out=buf[4:12].reshape(2, 4)))(
        _z(20)), "silu_mul_halves", "must not overlap"),
    "sigmoid-shape": (lambda: ops.sigmoid_mul(_z(5), _z(4)), "sigmoid_mul", "must match"),
    "scale-out-dtype": (lambda: ops.scale(_z(5), 2.0, out=_z(5, dtype=np.int32)), "scale", "F32"),
    # softmax / argmax / topk
    "softmax-1d": (lambda: ops.softmax(_z(5)), "softmax", "2 dims"),
    "softmax-temperature": (lambda: ops.softmax(_z(1, 5), 0.0), "softmax", "temperature"),
    "softmax-temperature-nan": (lambda: ops.softmax(_z(1, 5), float("nan")), "softmax", "temperature"),
    "softmax-empty-row": (lambda: ops.softmax(_z(2, 0)), "softmax", "column"),
    "argmax-dtype": (lambda: ops.argmax(_z(2, 5, dtype=np.int32)), "argmax", "F32"),
    "argmax-3d": (lambda: ops.argmax(_z(1, 2, 5)), "argmax", "2 dims"),
    "topk-k-zero": (lambda: ops.topk(_z(2, 5), 0), "topk", "k must"),
    "topk-k-too-big": (lambda: ops.topk(_z(2, 5), 6), "topk", "k must"),
    # attention
    "attn-q-2d": (lambda: ops.attention(_z(1, 64), _z(1, 8, 64), _z(1, 8, 64), 0), "attention", "3 dims"),
    "attn-head-dim": (lambda: ops.attention(_z(1, 1, 40), _z(1, 8, 40), _z(1, 8, 40), 0), "attention", "head_dim"),
    "attn-head-dim-mismatch": (lambda: ops.attention(_z(1, 1, 64), _z(1, 8, 32), _z(1, 8, 32), 0), "attention",
                               "k_cache"),
    "attn-gqa": (lambda: ops.attention(_z(1, 4, 64), _z(3, 8, 64), _z(3, 8, 64), 0), "attention", "multiple"),
    "attn-v-shape": (lambda: ops.attention(_z(1, 2, 64), _z(1, 8, 64), _z(1, 9, 64), 0), "attention", "v_cache"),
    "attn-capacity": (lambda: ops.attention(_z(2, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 7), "attention", "capacity"),
    "attn-prefix-neg": (lambda: ops.attention(_z(1, 2, 64), _z(1, 8, 64), _z(1, 8, 64), -1), "attention",
                        "prefix_len"),
    "attn-mask-shape": (lambda: ops.attention(_z(3, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 0, _z(2, 3, dtype=np.uint8)),
                        "attention", "mask"),
    "attn-mask-narrow": (lambda: ops.attention(_z(3, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 0, _z(3, 2, dtype=np.uint8)),
                         "attention", "columns"),
    "attn-mask-capacity": (lambda: ops.attention(_z(1, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 4,
                                                 _z(1, 5, dtype=np.uint8)), "attention", "capacity"),
    "attn-mask-dtype": (lambda: ops.attention(_z(2, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 0, _z(2, 2)), "attention",
                        "U8"),
    "attn-k-dtype": (lambda: ops.attention(_z(1, 2, 64), _z(1, 8, 64, dtype=np.int32), _z(1, 8, 64), 0), "attention",
                     "F32"),
    "attn-scale": (lambda: ops.attention(_z(1, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 0, scale=-1.0), "attention",
                   "scale"),
    "attn-out-shape": (lambda: ops.attention(_z(1, 2, 64), _z(1, 8, 64), _z(1, 8, 64), 0, out=_z(1, 2, 32)),
                       "attention", "must match q"),
    # kv
    "kv-write-heads": (lambda: ops.kv_write(_z(1, 2, 64), _z(3, 8, 64), 0), "kv_write", "dim 1"),
    "kv-write-dim": (lambda: ops.kv_write(_z(1, 3, 32), _z(3, 8, 64), 0), "kv_write", "dim 2"),
    "kv-write-overflow": (lambda: ops.kv_write(_z(2, 3, 64), _z(3, 8, 64), 7), "kv_write", "capacity"),
    "kv-write-negative": (lambda: ops.kv_write(_z(1, 3, 64), _z(3, 8, 64), -1), "kv_write", "capacity"),
    "kv-write-dtype": (lambda: ops.kv_write(_z(1, 3, 64, dtype=np.int32), _z(3, 8, 64), 0), "kv_write", "F32"),
    "kv-move-slot": (lambda: ops.kv_move_rows(_z(3, 8, 64), np.array([2, 8], np.int32), 1), "kv_move_rows",
                     "src_slots\\[1\\] = 8"),
    "kv-move-negative-slot": (lambda: ops.kv_move_rows(_z(3, 8, 64), np.array([-1], np.int32), 0), "kv_move_rows",
                              "src_slots"),
    "kv-move-dst": (lambda: ops.kv_move_rows(_z(3, 8, 64), np.array([5, 6], np.int32), 7), "kv_move_rows",
                    "capacity"),
    "kv-move-dtype": (lambda: ops.kv_move_rows(_z(3, 8, 64), np.array([5, 6], np.int64), 0), "kv_move_rows", "I32"),
    "kv-move-2d": (lambda: ops.kv_move_rows(_z(8, 64), np.array([5], np.int32), 0), "kv_move_rows", "3 dims"),
    # moe: what each expert's matmul needs is checked before anything is recorded
    "moe-expert-dtype": (lambda: ops.moe_ffn(_z(2, 32), _z(2, 4), _z(4, 8, 32, dtype=np.int32), _z(4, 8, 32),
                                             _z(4, 32, 8), 2, True), "moe_ffn", "gate_exps: unsupported weight type"),
    "moe-expert-shape": (lambda: ops.moe_ffn(_z(2, 32), _z(2, 4), _z(4, 8, 32), _z(4, 8, 32), _z(4, 32, 9), 2,
                                             True), "moe_ffn", "down_exps"),
    "moe-top-k": (lambda: ops.moe_ffn(_z(2, 32), _z(2, 4), _z(4, 8, 32), _z(4, 8, 32), _z(4, 32, 8), 5, True),
                  "moe_ffn", "top_k"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_raises_value_error(name):
    fn, op, fragment = CASES[name]
    with pytest.raises(ValueError, match=rf"^\[{op}\] .*{fragment}"):
        fn()


def test_read_only_cache_is_refused():
    cache = _z(3, 8, 64)
    cache.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ops.kv_write(_z(1, 3, 64), cache, 0)


def test_bad_slot_inside_an_encoder_raises_at_commit_and_leaves_cache_intact():
    cache = np.arange(3 * 8 * 16, dtype=f32).reshape(3, 8, 16)
    before = cache.copy()
    enc = _core.Encoder()
    ops.kv_move_rows(cache, np.array([1, 99], np.int32), 0, encoder=enc)
    with pytest.raises(ValueError, match=r"^\[kv_move_rows\]"):
        enc.commit()
    assert np.array_equal(cache, before)
