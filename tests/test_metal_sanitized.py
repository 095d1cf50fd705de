"""A representative subset of Metal kernels once more under ASan + UBSan. The cases run through
the engine's real Metal host (planners, encoder, emulator driver), which records every launch as
a request file; the sanitized driver replays each one with every buffer in its own exact-size
heap block (any out-of-bounds device access aborts with a report) and must reproduce the
in-process result bit for bit."""

import os
import struct
import subprocess

import pytest

from tests.metal_emu import cases as mc
from tests.metal_emu.fixtures import emulator, metal_device, sanitized_emulator  # noqa: F401 (pytest fixtures)

# One or two cases per kernel family, chosen for odd shapes and partial threadgroups.
SUBSET = [
    "rms_norm-5x33", "rope-interleaved-t3-h2-d96-r32-inplace", "add-4x100-row", "silu_mul-2x77-wide", "silu_mul_halves-3x77-wide",
    "sigmoid_mul-5x31", "scale-3x17", "softmax-5x1000-t1.0-log", "argmax-8x100-ties", "topk-3x100-k10-ties",
    "attention-q9-h6/2-d80-p16-tree", "attention-q4-h4/1-d64-p12-tree-n11", "kv_write-t5-h2-d16-cap8-at0",
    "kv_move_rows-overlap-backward", "matmul-Q4_0-3x17x160", "matmul-Q5_1-19x3x96", "matmul-Q4_K-9x5x768",
    "matmul-Q6_K-3x17x512", "matmul-BF16-2x3x7", "embedding-Q5_K-9x512-T5", "embedding-Q4_1-9x96-T5",
]
CASES = {c.id: c for c in mc.all_cases()}


def _buffer_lengths(request: bytes) -> list[int]:
    """Byte lengths of the bound buffers, in order (request format: tests/metal_emu/driver.cpp)."""
    pos = 4
    (n,) = struct.unpack_from("<I", request, pos)
    pos += 4 + n
    (n,) = struct.unpack_from("<I", request, pos)
    pos += 4 + n
    (nbuf,) = struct.unpack_from("<I", request, pos)
    pos += 4
    lengths = []
    for _ in range(nbuf):
        _, size = struct.unpack_from("<IQ", request, pos)
        lengths.append(size)
        pos += 12 + size
    return lengths


def _written(result: bytes, lengths: list[int]) -> dict[int, bytes]:
    """{binding position: bytes} of the engine's result file (driver_emu.cpp write_result)."""
    out, pos = {}, 0
    while pos < len(result):
        (i,) = struct.unpack_from("<I", result, pos)
        out[i] = result[pos + 4:pos + 4 + lengths[i]]
        pos += 4 + lengths[i]
    return out


def _replay(exe, request):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    out = request.with_name(request.name + ".asan")
    r = subprocess.run([str(exe), str(request), str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, f"{request.name}: sanitized run failed (exit {r.returncode}):\n{r.stderr[-4000:]}"
    return out.read_bytes()


@pytest.mark.parametrize("case_id", SUBSET)
def test_sanitized(metal_device, sanitized_emulator, case_id, tmp_path):
    case = CASES[case_id]
    variants = ["vec", "mat"] if case.op == "matmul" else ["auto"]
    for v in variants:
        rec = tmp_path / v
        rec.mkdir()
        out = mc.run(metal_device, case, mc.inputs(case), matmul=v, schedule=2, seed=11, record_dir=str(rec))
        mc.check(case, out, case.ref(mc.inputs(case)), f"{case.id} {v}")
        requests = sorted(rec.glob("*.req"))
        assert requests, "no launch was recorded"
        for req in requests:
            lengths = _buffer_lengths(req.read_bytes())
            written = _written(req.with_name(req.name + ".out").read_bytes(), lengths)
            asan = _replay(sanitized_emulator.exe, req)
            starts = [sum(lengths[:i]) for i in range(len(lengths))]
            assert written, f"{req.name}: the launch writes nothing"
            for i, data in written.items():
                assert asan[starts[i]:starts[i] + lengths[i]] == data, f"{case.id} {v}: {req.name} differs under ASan"


def test_subset_covers_every_family():
    assert {CASES[i].op for i in SUBSET} == set(mc.KERNEL_OPS)
