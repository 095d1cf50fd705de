"""The backend seam (csrc/ops/backend.h): every op validates, then reaches the backend of its
encoder's device through one lookup that checks where each buffer lives. Only csrc/cpu knows the
CPU kernels; the test hooks _device and _seam_probe build the cases no real call makes (a device
with no driver, buffers tagged as another device's memory)."""

import re
from pathlib import Path

import numpy as np
import pytest

from eyas import _core
from tests.metal_emu.fixtures import emulator, metal_device  # noqa: F401 (pytest fixtures)

ops = _core.ops
ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
f32, i32 = np.float32, np.int32
rng = np.random.default_rng(0)


def _r(*shape):
    return rng.standard_normal(shape).astype(f32)


def _z(*shape, dtype=f32):
    return np.zeros(shape, dtype)


# One valid call per op that takes an encoder; each records exactly one op.
CALLS = {
    "rms_norm": lambda e: ops.rms_norm(_r(2, 16), _r(16), encoder=e),
    "rope": lambda e: ops.rope(_r(2, 1, 16), _z(2, dtype=i32), np.ones(8, f32), encoder=e),
    "add": lambda e: ops.add(_r(2, 8), _r(2, 8), encoder=e),
    "silu_mul": lambda e: ops.silu_mul(_r(2, 8), _r(2, 8), encoder=e),
    "silu_mul_halves": lambda e: ops.silu_mul_halves(_r(2, 16), encoder=e),
    "sigmoid_mul": lambda e: ops.sigmoid_mul(_r(2, 8), _r(2, 8), encoder=e),
    "scale": lambda e: ops.scale(_r(2, 8), 2.0, encoder=e),
    "softmax": lambda e: ops.softmax(_r(2, 8), encoder=e),
    "argmax": lambda e: ops.argmax(_r(2, 8), encoder=e),
    "topk": lambda e: ops.topk(_r(2, 8), 3, encoder=e),
    "attention": lambda e: ops.attention(_r(1, 2, 16), _r(1, 4, 16), _r(1, 4, 16), 0, encoder=e),
    "attention_many": lambda e: ops.attention_many(
        [dict(q=_r(1, 2, 16), k_cache=_r(1, 4, 16), v_cache=_r(1, 4, 16), prefix_len=0, mask=None)], 0.25, encoder=e),
    "kv_write": lambda e: ops.kv_write(_r(2, 1, 16), _z(1, 4, 16), 0, encoder=e),
    "kv_move_rows": lambda e: ops.kv_move_rows(_z(1, 4, 16), np.array([2, 3], i32), 0, encoder=e),
    "matmul": lambda e: ops.matmul(_r(2, 32), _r(4, 32).view(np.uint8), "F32", [4, 32], encoder=e),
    "embedding": lambda e: ops.embedding(_r(4, 32).view(np.uint8), "F32", [4, 32], np.array([1, 3], i32), encoder=e),
    "copy_cols": lambda e: ops.copy_cols(_r(2, 8), 0, _z(2, 8), 4, 4, encoder=e),
    "sigmoid_scale_rows": lambda e: ops.sigmoid_scale_rows(_r(2, 8), _r(2, 1), encoder=e),
    "moe_route": lambda e: ops.moe_route(_r(2, 4), 2, True, encoder=e),
    "gdn_conv": lambda e: ops.gdn_conv(_r(2, 8), np.array([-1, 0], i32), _r(3, 8), _r(8, 4), encoder=e),
    "gdn_conv_state": lambda e: ops.gdn_conv_state(_r(3, 8), _r(2, 8), encoder=e),
    "gdn_core": lambda e: ops.gdn_core(_r(2, 12), _r(2, 2), _r(2, 2), _r(2), _r(2), np.array([-1, 0], i32),
                                       _r(2, 2, 4), hk=1, dk=2, encoder=e),
    "moe_ffn": lambda e: ops.moe_ffn(_r(2, 32), _r(2, 4), _r(4, 8, 32), _r(4, 8, 32), _r(4, 32, 8), 2, True, encoder=e),
}


def _ops_with_encoder():
    names = []
    for n in dir(ops):
        f = getattr(ops, n)
        if n.startswith("_") or not callable(f) or isinstance(f, type):
            continue
        if "encoder:" in (f.__doc__ or "").split("\n")[0]:
            names.append(n)
    return sorted(names)


def _metal_encoder():
    return _core.Encoder(ops._device("metal"))


def test_every_op_with_an_encoder_is_covered():
    assert sorted(CALLS) == _ops_with_encoder()


@pytest.mark.parametrize("op", sorted(CALLS))
def test_calls_run_on_the_cpu(op):
    enc = _core.Encoder()
    CALLS[op](enc)
    assert enc.num_dispatches >= 1
    enc.commit()


@pytest.mark.parametrize("op", sorted(CALLS))
def test_a_metal_device_without_a_driver_refuses_every_op(op):
    # ops._device builds a device with no driver: nothing may be recorded for it.
    enc = _metal_encoder()
    with pytest.raises(ValueError, match=rf"^\[{op}\] this metal device has no driver"):
        CALLS[op](enc)
    assert enc.num_dispatches == 0


@pytest.mark.parametrize("op", sorted(CALLS))
def test_cpu_memory_runs_on_metal(metal_device, op):
    # Metal shares memory with the CPU: numpy arrays go to Metal kernels (or host steps) as they are.
    enc = _core.Encoder(metal_device)
    CALLS[op](enc)
    assert enc.num_dispatches >= 1
    enc.commit()


def test_validation_comes_first_on_every_device():
    with pytest.raises(ValueError, match=r"^\[rms_norm\] w dim 0 must be 16"):
        ops.rms_norm(_r(2, 16), _r(15), encoder=_metal_encoder())


@pytest.mark.parametrize("op", ["rms_norm", "matmul"])
@pytest.mark.parametrize("foreign", [0, 1, 2])
def test_a_buffer_of_another_device_is_refused(op, foreign):
    x, w = _r(2, 16), (_r(16) if op == "rms_norm" else _r(4, 16))
    devices = ["cpu"] * 3
    devices[foreign] = "metal"
    enc = _core.Encoder()
    with pytest.raises(ValueError, match=rf"^\[{op}\] F32\[.*\] is in metal memory but the encoder runs on cpu"):
        ops._seam_probe(op, x, w, devices, encoder=enc)
    assert enc.num_dispatches == 0


@pytest.mark.parametrize("op", ["rms_norm", "matmul"])
def test_a_device_without_a_driver_is_a_clear_error(op):
    x, w = _r(2, 16), (_r(16) if op == "rms_norm" else _r(4, 16))
    enc = _metal_encoder()
    with pytest.raises(ValueError, match=rf"^\[{op}\] this metal device has no driver"):
        ops._seam_probe(op, x, w, ["metal"] * 3, encoder=enc)
    assert enc.num_dispatches == 0


def test_probe_on_cpu_buffers_equals_the_op():
    x, w = _r(3, 16), _r(16)
    assert np.array_equal(ops._seam_probe("rms_norm", x, w, ["cpu"] * 3), ops.rms_norm(x, w))
    wm = _r(5, 16)
    y = ops._seam_probe("matmul", x, wm, ["cpu"] * 3)
    assert np.array_equal(y, ops.matmul(x, wm.view(np.uint8), "F32", [5, 16]))


def test_device_kinds():
    assert ops._device("cpu").backend == "cpu"
    assert ops._device("metal").backend == "metal"
    with pytest.raises(ValueError, match=r"^\[_device\] unknown backend 'gpu'"):
        ops._device("gpu")
    with pytest.raises(ValueError, match=r"^\[Device\] unknown backend 'gpu'"):
        _core.Device("gpu")


def _sources(outside_cpu=True):
    for p in sorted(CSRC.rglob("*")):
        if p.suffix not in (".h", ".cpp", ".mm", ".hpp", ".cc"):
            continue
        if outside_cpu and p.relative_to(CSRC).parts[0] == "cpu":
            continue
        yield p


def test_nothing_outside_csrc_cpu_reaches_the_cpu_kernels():
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in _sources() for i, line in
                 enumerate(p.read_text().splitlines(), 1) if "cpu::" in line or '#include "cpu/' in line]
    assert not offenders, offenders


def test_ops_record_only_through_the_backend():
    # An op never records a closure itself: each public op ends in backend_for(...).<op>(...).
    found = []
    for p in sorted((CSRC / "ops").glob("*.cpp")):
        text = p.read_text()
        assert ".dispatch(" not in text, p.name
        for m in re.finditer(r"^void (\w+)\(Encoder& enc,", text, re.M):
            body = text[m.end():text.index("\n}\n", m.end())]
            assert "backend_for(" in body, f"{p.name}: {m.group(1)} does not go through backend_for"
            found.append(m.group(1))
    assert sorted(found) == sorted(CALLS)
