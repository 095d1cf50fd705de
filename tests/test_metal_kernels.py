"""Every Metal kernel, run by the MSL emulator, against the CPU ops' numpy references and
tolerance table (tests/parity), in forward, reverse and seeded-random thread schedules."""

import zlib

import numpy as np
import pytest

from tests.metal_emu import cases as mc
from tests.metal_emu.fixtures import emulator  # noqa: F401 (pytest fixture)
from tests.metal_emu.host import Host

CASES = mc.all_cases()
SCHEDULES = ["forward", "reverse", "random"]


def _inputs(case):
    return case.make_inputs(np.random.default_rng(zlib.crc32(case.id.encode())))  # stable across runs


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_metal_matches_reference(emulator, case, schedule):
    a = _inputs(case)
    host = Host(emulator, schedule, seed=7)
    ref = case.ref(a)
    if case.op == "matmul":
        # Both variants against the reference, and bit-identical to each other: a row's result
        # must not depend on which T-path computed it (batch invariance).
        vec, mat = mc.run(host, case, a, "vec"), mc.run(host, case, a, "mat")
        mc.check(case, vec, ref, f"{case.id} vec")
        mc.check(case, mat, ref, f"{case.id} mat")
        assert np.array_equal(vec, mat), f"{case.id}: vec and mat variants differ"
    else:
        mc.check(case, mc.run(host, case, a), ref, case.id)


BIT_EXACT_VS_CPU = ("matmul", "embedding", "attention", "kv_write", "kv_move_rows", "argmax", "topk", "add", "silu_mul",
                    "sigmoid_mul", "scale")


@pytest.mark.parametrize("case", [c for c in CASES if c.op in BIT_EXACT_VS_CPU],
                         ids=[c.id for c in CASES if c.op in BIT_EXACT_VS_CPU])
def test_metal_bits_equal_cpu(emulator, case):
    """Kernels written to the CPU's exact operation order give the CPU op's bits."""
    a = _inputs(case)
    cpu = case.run(a)
    out = mc.run(Host(emulator), case, a)
    for o, c in zip(out if isinstance(out, tuple) else (out,), cpu if isinstance(cpu, tuple) else (cpu,)):
        assert np.array_equal(np.asarray(o), np.asarray(c)), f"{case.id}: Metal and CPU bits differ"


@pytest.mark.parametrize("op", ["rms_norm", "softmax", "attention", "topk"])
@pytest.mark.parametrize("tg", [32, 96, 1024])
def test_row_kernels_any_threadgroup_size(emulator, op, tg):
    """Row kernels are correct for any threadgroup size (single simdgroup, partial, maximum)."""
    for case in [c for c in CASES if c.op == op][:4]:
        a = _inputs(case)
        mc.check(case, mc.run(Host(emulator, "random", seed=3, rows_tg=tg), case, a), case.ref(a), f"{case.id} tg{tg}")


def test_batch_invariance_rows(emulator):
    """A row's bits do not depend on how many rows the call has (rms_norm, softmax, matmul)."""
    rng = np.random.default_rng(0)
    host = Host(emulator, "random", seed=1)
    x = rng.standard_normal((9, 300), dtype=np.float32)
    w = rng.standard_normal(300, dtype=np.float32)
    assert np.array_equal(host.rms_norm(x, w, 1e-5)[4:5], host.rms_norm(x[4:5], w, 1e-5))
    assert np.array_equal(host.softmax(x, 0.8, False)[7:8], host.softmax(x[7:8], 0.8, False))
    from tests import quant_ref as qr

    wq = qr.random_weights(rng, "Q4_K", 12, 512)
    xx = rng.standard_normal((9, 512), dtype=np.float32)
    full = host.matmul(xx, wq, "Q4_K", 12, 512)  # 9 rows: *_mat
    one = host.matmul(xx[5:6], wq, "Q4_K", 12, 512)  # 1 row: *_vec
    assert np.array_equal(full[5:6], one)
