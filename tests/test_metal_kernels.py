"""Every parity case (tests/parity) run through the engine on Device('metal') — the Metal backend's
planners, the encoder and the emulator driver executing the unmodified .metal sources — against
the numpy references and tolerances, in forward, reverse and seeded-random thread schedules, and
against the CPU backend's bits."""

import numpy as np
import pytest

from eyas import _core
from tests.metal_emu import cases as mc
from tests.metal_emu.fixtures import emulator, metal_device  # noqa: F401 (pytest fixtures)

CASES = mc.all_cases()
KERNEL_CASES = [c for c in CASES if c.op in mc.KERNEL_OPS]
SCHEDULES = {"forward": 0, "reverse": 1, "random": 2}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", KERNEL_CASES, ids=[c.id for c in KERNEL_CASES])
def test_metal_matches_reference(metal_device, case, schedule):
    ref = case.ref(mc.inputs(case))
    hooks = dict(schedule=SCHEDULES[schedule], seed=7)
    if case.op == "matmul":
        # Both variants against the reference, and bit-identical to each other: a row's result
        # must not depend on which T-path computed it (batch invariance).
        vec = mc.run(metal_device, case, mc.inputs(case), matmul="vec", **hooks)
        mat = mc.run(metal_device, case, mc.inputs(case), matmul="mat", **hooks)
        mc.check(case, vec, ref, f"{case.id} vec")
        mc.check(case, mat, ref, f"{case.id} mat")
        assert np.array_equal(vec, mat), f"{case.id}: vec and mat variants differ"
    else:
        mc.check(case, mc.run(metal_device, case, mc.inputs(case), **hooks), ref, case.id)


# softmax (sampling only; the forward pass does not use it) matches the reference within f32
# tolerance; every other op, kernels and host steps alike, gives the CPU backend's exact bits.
BITS = [c for c in CASES if c.op != "softmax"]


@pytest.mark.parametrize("case", BITS, ids=[c.id for c in BITS])
def test_metal_bits_equal_cpu(metal_device, case):
    cpu = case.run(mc.inputs(case))
    out = mc.run(metal_device, case, mc.inputs(case), schedule=2, seed=5)
    for o, c in zip(out if isinstance(out, tuple) else (out,), cpu if isinstance(cpu, tuple) else (cpu,)):
        if isinstance(c, dict):
            assert c.keys() == o.keys()
            for k in c:
                assert np.array_equal(np.asarray(o[k]), np.asarray(c[k])), f"{case.id}[{k}]: Metal and CPU bits differ"
        else:
            assert np.array_equal(np.asarray(o), np.asarray(c)), f"{case.id}: Metal and CPU bits differ"


@pytest.mark.parametrize("op", ["rms_norm", "softmax", "attention", "topk"])
@pytest.mark.parametrize("limit", [32, 96, 1024])
def test_row_kernels_any_threadgroup_size(metal_device, op, limit):
    """Row kernels are correct at any threadgroup size the pipeline allows (one simdgroup, a
    partial one, the default); rms_norm keeps the CPU's bits at every size."""
    for case in [c for c in CASES if c.op == op][:4]:
        out = mc.run(metal_device, case, mc.inputs(case), thread_limit=limit, schedule=2, seed=3)
        mc.check(case, out, case.ref(mc.inputs(case)), f"{case.id} limit{limit}")
        if op == "rms_norm":
            assert np.array_equal(out, case.run(mc.inputs(case)))


def test_batch_invariance_rows(metal_device):
    """A row's bits do not depend on how many rows the call has (rms_norm, softmax, matmul)."""
    from tests import quant_ref as qr

    rng = np.random.default_rng(0)
    ops = _core.ops
    x = rng.standard_normal((9, 300), dtype=np.float32)
    w = rng.standard_normal(300, dtype=np.float32)
    wq = qr.random_weights(rng, "Q4_K", 12, 512)
    xx = rng.standard_normal((9, 512), dtype=np.float32)
    with mc.on_device(metal_device):
        assert np.array_equal(ops.rms_norm(x, w, 1e-5)[4:5], ops.rms_norm(x[4:5], w, 1e-5))
        assert np.array_equal(ops.softmax(x, 0.8)[7:8], ops.softmax(x[7:8], 0.8))
        full = ops.matmul(xx, wq, "Q4_K", [12, 512])  # 9 rows: *_mat
        one = ops.matmul(xx[5:6], wq, "Q4_K", [12, 512])  # 1 row: *_vec
    assert np.array_equal(full[5:6], one)
