"""The MSL emulator itself: it must catch the bugs it exists to catch (missing and divergent
barriers, divergent simd collectives, unwritten threadgroup reads, out-of-bounds accesses,
host-contract errors), and the lowering step must reject code outside the MSL subset."""

import ctypes

import numpy as np
import pytest

from tests.metal_emu import lower
from tests.metal_emu.fixtures import emulator, sanitized_emulator  # noqa: F401 (pytest fixtures)
from tests.metal_emu.runner import EmuError, pack_args


def _race_kernel(emu, racy, schedule, seed=0):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 200), dtype=np.float32)
    y = np.zeros((3, 2), np.float32)
    emu.dispatch("bug_missing_barrier", pack_args("RmsNormArgs", rows=3, dim=200, eps=float(racy)), [x, y], 3, 128,
                 schedule=schedule, seed=seed)
    ref = np.stack([x.astype(np.float64).sum(1), (x.astype(np.float64) ** 2).sum(1)], 1)
    return np.allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_missing_barrier_is_caught_by_some_schedule(emulator):
    runs = [("forward", 0), ("reverse", 0)] + [("random", s) for s in range(3)]
    assert all(_race_kernel(emulator, False, sch, seed) for sch, seed in runs)  # the correct kernel
    assert not all(_race_kernel(emulator, True, sch, seed) for sch, seed in runs), "race went unnoticed"


@pytest.mark.parametrize("kernel,tg,message", [
    ("bug_divergent_barrier", 64, "divergent barrier"),
    ("bug_return_before_barrier", 64, "returned while thread"),
    ("bug_divergent_simd", 32, "divergent simd collective"),
    ("bug_threadgroup_too_big", 32, "exceeds 32 KiB"),
])
@pytest.mark.parametrize("schedule", ["forward", "reverse", "random"])
def test_synchronisation_bugs_are_errors(emulator, kernel, tg, message, schedule):
    with pytest.raises(EmuError, match=message) as e:
        emulator.dispatch(kernel, None, [np.zeros(64, np.float32)], 1, tg, schedule=schedule)
    assert kernel in str(e.value) and "threadgroup (0,0,0)" in str(e.value)


def test_unwritten_threadgroup_memory_reads_as_nan(emulator):
    y = np.zeros(64, np.float32)
    emulator.dispatch("bug_uninit_threadgroup_read", None, [y], 1, 64)
    assert np.isnan(y[16:48]).all() and np.isfinite(y[:16]).all()


def test_out_of_bounds_write_is_caught_in_process(emulator):
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    with pytest.raises(EmuError, match=r"write outside buffer\(2\)"):
        emulator.dispatch("bug_oob", None, [x, y], 2, 32)


def test_out_of_bounds_read_is_caught_by_asan(sanitized_emulator):
    x, y = np.ones(64, np.float32), np.zeros(65, np.float32)
    with pytest.raises(EmuError, match="heap-buffer-overflow"):
        sanitized_emulator.dispatch("bug_oob", None, [x, y], 2, 32)


def test_threadgroup_argument_memory(emulator):
    x = np.arange(96, dtype=np.float32)
    y = np.zeros(96, np.float32)
    emulator.dispatch("tg_arg_reverse", None, [x, y], 3, 32, tg_mem=(128,), schedule="random")
    assert np.array_equal(y, x.reshape(3, 32)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("call,message", [
    (dict(name="nope"), "unknown kernel 'nope'"),
    (dict(buffers=1), r"buffer\(2\) is not bound"),
    (dict(args=b"\0" * 8), r"buffer\(0\) has 8 bytes, the kernel reads 12"),
    (dict(args=b"\0" * 5000), "setBytes of 5000 bytes"),
    (dict(tg=2048), "2048 threads per threadgroup"),
    (dict(grid=0), "empty grid"),
    (dict(misalign=True), r"buffer\(1\) is not 4-byte aligned"),
])
def test_host_contract_errors(emulator, call, message):
    x, w, y = np.ones((2, 8), np.float32), np.ones(8, np.float32), np.zeros((2, 8), np.float32)
    args = call.get("args", pack_args("RmsNormArgs", rows=2, dim=8, eps=1e-5))
    bufs = [x, w, y][:call.get("buffers", 3)]
    with pytest.raises(EmuError, match=message):
        if call.get("misalign"):
            _dispatch_misaligned(emulator, args, offset=1)
        else:
            emulator.dispatch(call.get("name", "rms_norm_f32"), args, bufs, call.get("grid", 2), call.get("tg", 32))


def _dispatch_misaligned(emu, args, offset):
    """rms_norm_f32 with float buffers starting `offset` bytes past a 16-byte boundary."""
    raw = np.zeros(256, np.uint8)
    base = raw.ctypes.data + (-raw.ctypes.data) % 16 + offset
    idx = (ctypes.c_uint32 * 3)(1, 2, 3)
    ptrs = (ctypes.c_void_p * 3)(base, base + 64, base + 128)
    lens = (ctypes.c_uint64 * 3)(64, 32, 64)
    g, t = (ctypes.c_uint32 * 3)(2, 1, 1), (ctypes.c_uint32 * 3)(32, 1, 1)
    argbuf = ctypes.create_string_buffer(args, len(args))
    if emu.lib.emu_dispatch(b"rms_norm_f32", argbuf, len(args), 3, idx, ptrs, lens, g, t, 0, None, 0, 0):
        raise EmuError(emu.lib.emu_last_error().decode())


def test_threadgroup_memory_length_rules(emulator):
    x, y = np.zeros(32, np.float32), np.zeros(32, np.float32)
    with pytest.raises(EmuError, match="not a multiple of 16"):
        emulator.dispatch("tg_arg_reverse", None, [x, y], 1, 32, tg_mem=(100,))
    with pytest.raises(EmuError, match=r"threadgroup\(0\) memory length is not set"):
        emulator.dispatch("tg_arg_reverse", None, [x, y], 1, 32)
    with pytest.raises(EmuError, match="exceeds 32 KiB"):
        emulator.dispatch("tg_arg_reverse", None, [x, y], 1, 32, tg_mem=(40000,))


@pytest.mark.parametrize("src,message", [
    ("kernel void k(device float4* y [[buffer(1)]]) { y[0] = (float4) y[1]; }", "C-style vector cast"),
    ("kernel void k(device half* y [[buffer(1)]]) { y[0] = 1.5h; }", "half literal"),
    ("kernel void k(device float* y) { y[0] = 1; }", "without an attribute"),
    ("kernel void k(device float* y [[bufer(1)]]) { y[0] = 1; }", r"unknown attribute \[\[bufer\]\]"),
    ("kernel void k(device float* y [[buffer(1)]]) { threadgroup float a[4], b[4]; }", "multi-declarator"),
    ("template <int N> kernel void k(device float* y [[buffer(1)]]) {}\n"
     "template [[host_name(\"k1\")]] kernel decltype(k<1>) k<2>;", "instantiation not of the form"),
])
def test_lowering_rejects_code_outside_the_subset(src, message):
    with pytest.raises(lower.LowerError, match=message):
        lower.lower(src, "t.metal")


def test_lowering_keeps_line_numbers():
    src = ("// c\nkernel void k(device float* y [[buffer(1)]],\n  threadgroup float* t [[threadgroup(0)]]) {\n"
           "  threadgroup float a[4];\n  y[0] = a[0];\n}\n")
    text, inst = lower.lower(src, "t.metal")
    body = text.split('#line 1 "', 1)[1].split("\n", 1)[1]
    assert body.split("\n")[3].strip() == "MSL_TG_ARRAY(float, a, [4]);"
    assert body.split("\n")[4].strip() == "y[0] = a[0];"
    assert "[[msl_tg_arg(0)]]" in body.split("\n")[2]
    assert [h for h, _, _ in inst] == ["k"]
