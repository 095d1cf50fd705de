"""Device('metal') on the emulator driver: how it is chosen (explicitly, never as a silent
fallback), and the negative paths of the real host: launches that break Metal's contract are
refused when recorded, faults inside a kernel surface as errors naming the kernel, bad KV moves
are errors and leave the cache as it was; after any of these the encoder keeps working."""

import struct
import sys

import numpy as np
import pytest

from eyas import _core
from tests.metal_emu.fixtures import emulator, metal_device  # noqa: F401 (pytest fixtures)

ops = _core.ops
ARGS = struct.pack("<iif", 2, 8, 1e-5)  # RmsNormArgs{rows, dim, eps}


@pytest.mark.skipif(sys.platform == "darwin", reason="off-macOS behaviour")
def test_metal_without_an_emulator_is_a_clear_error_off_macos(monkeypatch):
    monkeypatch.delenv("EYAS_METAL_EMULATOR", raising=False)
    with pytest.raises(ValueError, match=r"^\[Device\] .*macOS.*emulator=PATH or set EYAS_METAL_EMULATOR"):
        _core.Device("metal")


def test_the_emulator_is_chosen_by_argument_or_environment(emulator, monkeypatch):
    assert _core.Device("metal", 1, emulator=str(emulator.path)).driver == "emulator"
    monkeypatch.setenv("EYAS_METAL_EMULATOR", str(emulator.path))
    d = _core.Device("metal", 1)
    assert (d.backend, d.driver) == ("metal", "emulator")
    assert _core.Device("cpu", 1).driver == ""
    with pytest.raises(ValueError, match=r"^\[Device\] emulator= applies to device 'metal' only"):
        _core.Device("cpu", 1, emulator=str(emulator.path))


def test_a_bad_emulator_path_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"^\[Device\] cannot load the MSL emulator"):
        _core.Device("metal", 1, emulator=str(tmp_path / "missing.so"))
    with pytest.raises(ValueError, match=r"is not an MSL emulator library"):
        _core.Device("metal", 1, emulator=_core.__file__)


def _rms_buffers():
    x, w, y = np.ones((2, 8), np.float32), np.ones(8, np.float32), np.zeros((2, 8), np.float32)
    return x, w, y, [(1, x, "r"), (2, w, "r"), (3, y, "w")]


@pytest.mark.parametrize("change,message", [
    (dict(kernel="nope"), r"^\[metal\] unknown kernel 'nope'"),
    (dict(tg=(2048, 1, 1)), r"^\[rms_norm_f32\] metal: 2048 threads per threadgroup"),
    (dict(tg=(0, 1, 1)), r"metal: 0 threads per threadgroup"),
    (dict(grid=(0, 1, 1)), r"metal: empty grid"),
    (dict(args=b"\0" * 5000), r"metal: 5000 argument bytes"),
    (dict(tg_mem=[40]), r"metal: threadgroup memory length 40 is not a multiple of 16"),
    (dict(tg_mem=[32768, 16]), r"metal: 32784 bytes of threadgroup memory"),
    (dict(twice=True), r"metal: buffer\(2\) bound twice"),
    (dict(index0=True), r"metal: buffer index 0 out of range"),
])
def test_launches_that_break_the_contract_are_refused_when_recorded(metal_device, change, message):
    x, w, y, bufs = _rms_buffers()
    if change.get("twice"):
        bufs[2] = (2, y, "w")
    if change.get("index0"):
        bufs[0] = (0, x, "r")
    enc = _core.Encoder(metal_device)
    with pytest.raises(ValueError, match=message):
        ops._metal_launch(change.get("kernel", "rms_norm_f32"), change.get("args", ARGS), bufs,
                          change.get("grid", (2, 1, 1)), change.get("tg", (32, 1, 1)), change.get("tg_mem", []), enc)
    assert enc.num_dispatches == 0
    x, w, y, bufs = _rms_buffers()
    ops._metal_launch("rms_norm_f32", ARGS, bufs, (2, 1, 1), (32, 1, 1), [], enc)  # the encoder still works
    enc.commit()
    assert np.array_equal(y, ops.rms_norm(x, w, 1e-5))


def test_a_fault_inside_a_kernel_names_it_and_the_encoder_recovers(metal_device):
    y = np.zeros(64, np.float32)
    enc = _core.Encoder(metal_device)
    ops._metal_launch("bug_divergent_barrier", b"", [(1, y, "w")], (1, 1, 1), (64, 1, 1), [], enc)
    with pytest.raises(RuntimeError, match=r"^\[metal\] bug_divergent_barrier: .*barrier"):
        enc.commit()
    x, w, out, bufs = _rms_buffers()
    ops._metal_launch("rms_norm_f32", ARGS, bufs, (2, 1, 1), (32, 1, 1), [], enc)
    enc.commit()
    assert np.array_equal(out, ops.rms_norm(x, w, 1e-5))


def test_a_binding_smaller_than_the_kernel_reads_is_an_error(metal_device):
    x, w, y, bufs = _rms_buffers()
    enc = _core.Encoder(metal_device)
    ops._metal_launch("rms_norm_f32", ARGS[:8], bufs, (2, 1, 1), (32, 1, 1), [], enc)
    with pytest.raises(RuntimeError, match=r"buffer\(0\) has 8 bytes, the kernel reads 12"):
        enc.commit()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_out_of_range_kv_moves_are_errors_and_leave_the_cache(metal_device, dtype):
    cache = np.arange(2 * 6 * 16, dtype=np.float32).reshape(2, 6, 16).astype(dtype)
    before = cache.copy()
    for bad in ([1, 6], [-1, 2]):
        with pytest.raises(ValueError, match=r"^\[kv_move_rows\] src_slots\[\d\] = -?\d+ is outside the cache capacity 6"):
            ops.kv_move_rows(cache, np.array(bad, np.int32), 0, encoder=_core.Encoder(metal_device))
        assert np.array_equal(cache, before)
    enc = _core.Encoder(metal_device)
    ops.kv_move_rows(cache, np.array([3, 4], np.int32), 1, encoder=enc)
    enc.commit()
    assert np.array_equal(cache[:, 1:3], before[:, 3:5]) and np.array_equal(cache[:, 0], before[:, 0])


def test_more_masked_slots_than_the_kernel_takes_is_an_error(metal_device):
    n = 2049
    q, kv = np.zeros((1, 1, 16), np.float32), np.zeros((1, n, 16), np.float32)
    mask = np.ones((1, n), np.uint8)
    with pytest.raises(ValueError, match=r"^\[attention\] metal: at most 2048 masked new slots"):
        ops.attention(q, kv, kv, 0, mask=mask, encoder=_core.Encoder(metal_device))


def test_test_hooks_are_checked(metal_device):
    with pytest.raises(ValueError, match=r"thread_limit must be in \[32, 1024\]"):
        metal_device._set_test_hooks(thread_limit=8)
    with pytest.raises(ValueError, match=r"a CPU device has no GPU driver"):
        _core.Device("cpu", 1)._set_test_hooks()
