"""Encoder semantics on both devices: hazard-tracked barriers, serial mode, schedules, check mode.
On Metal (the emulator driver) the same recordings become GPU launches with barriers between
groups, and host steps wait for the launches before them."""

import numpy as np
import pytest

from eyas import _core
from tests.metal_emu.fixtures import emulator, metal_device  # noqa: F401 (pytest fixtures)


@pytest.fixture(params=["cpu", "metal"])
def device(request):
    return _core.Device("cpu", 1) if request.param == "cpu" else request.getfixturevalue("metal_device")


def _inputs(rng, rows=4, dim=32):
    return rng.standard_normal((rows, dim), dtype=np.float32), rng.standard_normal(dim, dtype=np.float32)


def test_independent_dispatches_share_a_group(device):
    x, w = _inputs(np.random.default_rng(0))
    enc = _core.Encoder(device)
    for _ in range(3):
        _core.ops.rms_norm(x, w, encoder=enc)
    enc.commit()
    assert enc.num_barriers == 0


def test_read_after_write_gets_a_barrier(device):
    x, w = _inputs(np.random.default_rng(1))
    enc = _core.Encoder(device)
    y = _core.ops.rms_norm(x, w, encoder=enc)
    _core.ops.rms_norm(x, w, encoder=enc)  # independent: same group
    _core.ops.rms_norm(y, w, encoder=enc)  # reads y: barrier before dispatch 2
    enc.commit()
    assert list(enc.barrier_positions) == [2]


def test_write_after_read_gets_a_barrier(device):
    x, w = _inputs(np.random.default_rng(2))
    enc = _core.Encoder(device)
    y = _core.ops.rms_norm(x, w, encoder=enc)
    _core.ops.rms_norm(np.ones_like(x), w, out=x, encoder=enc)  # overwrites x, which dispatch 0 reads
    enc.commit()
    assert list(enc.barrier_positions) == [1]
    assert np.isfinite(y).all()


def test_serial_mode_barriers_every_dispatch(device):
    x, w = _inputs(np.random.default_rng(3))
    enc = _core.Encoder(device, serial=True)
    for _ in range(4):
        _core.ops.rms_norm(x, w, encoder=enc)
    enc.commit()
    assert enc.num_barriers == 3


@pytest.mark.parametrize("schedule", [_core.Schedule.forward, _core.Schedule.reverse, _core.Schedule.shuffle])
def test_chain_is_correct_under_every_schedule(device, schedule):
    x, w = _inputs(np.random.default_rng(4))
    want = x
    for _ in range(5):
        want = _core.ops.rms_norm(want, w)
    enc = _core.Encoder(device, schedule=schedule, seed=7)
    y = x
    for _ in range(5):
        y = _core.ops.rms_norm(y, w, encoder=enc)
    enc.commit()
    assert np.array_equal(y, want)


def test_check_mode_accepts_declared_writes(device):
    x, w = _inputs(np.random.default_rng(5))
    enc = _core.Encoder(device, check=True)
    y = _core.ops.rms_norm(x, w, encoder=enc)
    _core.ops.rms_norm(y, w, encoder=enc)
    enc.commit()


@pytest.mark.parametrize("schedule", [_core.Schedule.forward, _core.Schedule.reverse, _core.Schedule.shuffle])
def test_host_steps_wait_for_the_launches_before_them(metal_device, schedule):
    # copy_cols has no Metal kernel: it runs on the host between launches, in hazard order.
    rng = np.random.default_rng(8)
    x, w = _inputs(rng, rows=3, dim=16)
    w32 = rng.standard_normal(32, dtype=np.float32)
    want = _core.ops.rms_norm(_core.ops.copy_cols(_core.ops.rms_norm(x, w), 0, np.zeros((3, 32), np.float32), 8, 16), w32)
    enc = _core.Encoder(metal_device, schedule=schedule, seed=3)
    y = _core.ops.rms_norm(x, w, encoder=enc)
    z = _core.ops.copy_cols(y, 0, np.zeros((3, 32), np.float32), 8, 16, encoder=enc)
    out = _core.ops.rms_norm(z, w32, encoder=enc)  # reads z: runs after the host step, after the launch
    enc.commit()
    assert list(enc.barrier_positions) == [1, 2]
    assert np.array_equal(out, want)


def test_check_mode_catches_a_launch_writing_what_it_declared_read(metal_device):
    import struct

    x, w = _inputs(np.random.default_rng(9), rows=2, dim=8)
    y = np.zeros_like(x)
    enc = _core.Encoder(metal_device, check=True)
    _core.ops.rms_norm(y, w, encoder=enc)  # y becomes a known range
    _core.ops._metal_launch("rms_norm_f32", struct.pack("<iif", 2, 8, 1e-5), [(1, x, "r"), (2, w, "r"), (3, y, "r")],
                            (2, 1, 1), (32, 1, 1), [], enc)
    with pytest.raises(RuntimeError, match=r"dispatch 'rms_norm_f32' wrote memory it did not declare"):
        enc.commit()


def test_read_only_output_is_rejected():
    x, w = _inputs(np.random.default_rng(6))
    out = np.zeros_like(x)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _core.ops.rms_norm(x, w, out=out)


def profiled_stderr(code: str) -> str:
    """stderr of `code` run in a fresh interpreter with EYAS_PROFILE=1 (the table prints at exit)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, EYAS_PROFILE="1")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stderr


def rms_norm_calls(err: str) -> str:
    return err.split("rms_norm/256")[1].splitlines()[0]


def test_profile_mode_reports_dispatches():
    # EYAS_PROFILE=1 times every dispatch and prints a table at exit (docs/performance.md).
    err = profiled_stderr("import numpy as np; from eyas import _core; x = np.ones((2, 32), np.float32); "
                          "enc = _core.Encoder(); y = _core.ops.rms_norm(x, x[0], encoder=enc); "
                          "_core.ops.rms_norm(y, x[0], encoder=enc); enc.commit()")
    assert "[encoder profile]" in err
    assert "rms_norm/256" in err and " 2 " in rms_norm_calls(err)


def test_profile_reset_drops_what_ran_before():
    # A benchmark's warm-up (repacks, first page touches) must not weigh on the per-call means.
    err = profiled_stderr("import numpy as np; from eyas import _core; x = np.ones((2, 32), np.float32); "
                          "y = _core.ops.rms_norm(x, x[0]); _core.ops.softmax(x); _core._profile_reset(); "
                          "_core.ops.rms_norm(y, x[0])")
    assert "rms_norm/256" in err and " 1 " in rms_norm_calls(err)
    assert "softmax" not in err
