"""Encoder semantics: hazard-tracked barriers, serial mode, schedules, check mode."""

import numpy as np
import pytest

from eyas import _core


def _inputs(rng, rows=4, dim=32):
    return rng.standard_normal((rows, dim), dtype=np.float32), rng.standard_normal(dim, dtype=np.float32)


def test_independent_dispatches_share_a_group():
    x, w = _inputs(np.random.default_rng(0))
    enc = _core.Encoder()
    for _ in range(3):
        _core.ops.rms_norm(x, w, encoder=enc)
    enc.commit()
    assert enc.num_barriers == 0


def test_read_after_write_gets_a_barrier():
    x, w = _inputs(np.random.default_rng(1))
    enc = _core.Encoder()
    y = _core.ops.rms_norm(x, w, encoder=enc)
    _core.ops.rms_norm(x, w, encoder=enc)  # independent: same group
    _core.ops.rms_norm(y, w, encoder=enc)  # reads y: barrier before dispatch 2
    enc.commit()
    assert list(enc.barrier_positions) == [2]


def test_write_after_read_gets_a_barrier():
    x, w = _inputs(np.random.default_rng(2))
    enc = _core.Encoder()
    y = _core.ops.rms_norm(x, w, encoder=enc)
    _core.ops.rms_norm(np.ones_like(x), w, out=x, encoder=enc)  # overwrites x, which dispatch 0 reads
    enc.commit()
    assert list(enc.barrier_positions) == [1]
    assert np.isfinite(y).all()


def test_serial_mode_barriers_every_dispatch():
    x, w = _inputs(np.random.default_rng(3))
    enc = _core.Encoder(serial=True)
    for _ in range(4):
        _core.ops.rms_norm(x, w, encoder=enc)
    enc.commit()
    assert enc.num_barriers == 3


@pytest.mark.parametrize("schedule", [_core.Schedule.forward, _core.Schedule.reverse, _core.Schedule.shuffle])
def test_chain_is_correct_under_every_schedule(schedule):
    x, w = _inputs(np.random.default_rng(4))
    want = x
    for _ in range(5):
        want = _core.ops.rms_norm(want, w)
    enc = _core.Encoder(schedule=schedule, seed=7)
    y = x
    for _ in range(5):
        y = _core.ops.rms_norm(y, w, encoder=enc)
    enc.commit()
    assert np.array_equal(y, want)


def test_check_mode_accepts_declared_writes():
    x, w = _inputs(np.random.default_rng(5))
    enc = _core.Encoder(check=True)
    y = _core.ops.rms_norm(x, w, encoder=enc)
    _core.ops.rms_norm(y, w, encoder=enc)
    enc.commit()


def test_read_only_output_is_rejected():
    x, w = _inputs(np.random.default_rng(6))
    out = np.zeros_like(x)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _core.ops.rms_norm(x, w, out=out)


def test_profile_mode_reports_dispatches():
    # EYAS_PROFILE=1 times every dispatch and prints a table at exit (docs/performance.md).
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from eyas import _core; x = np.ones((2, 32), np.float32); "
            "enc = _core.Encoder(); y = _core.ops.rms_norm(x, x[0], encoder=enc); "
            "_core.ops.rms_norm(y, x[0], encoder=enc); enc.commit()")
    env = dict(os.environ, EYAS_PROFILE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert "[encoder profile]" in r.stderr
    assert "rms_norm/256" in r.stderr and " 2 " in r.stderr.split("rms_norm/256")[1].splitlines()[0]
