"""Python side of the MSL emulator: packs kernel argument structs from metal/kernel_args.h,
binds numpy arrays as buffers and dispatches by kernel name, in-process (ctypes) or under
ASan/UBSan (subprocess). Mirrors the Metal host contract: args at buffer(0) via setBytes,
tensors at buffer(1..n), threadgroup memory lengths, dispatchThreadgroups(grid, tg).
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tests.metal_emu import build

SCHEDULES = {"forward": 0, "reverse": 1, "random": 2}
GUARD = 64  # sentinel bytes on each side of every buffer (in-process runs)
_FIELD = {"EYAS_I32": "i", "EYAS_U32": "I", "float": "f", "int": "i", "uint": "I"}


class EmuError(RuntimeError):
    """The emulator detected a kernel or host-contract error (message names kernel, group, thread)."""


def arg_structs() -> dict[str, list[tuple[str, str]]]:
    """struct name -> [(field, struct format char)] parsed from metal/kernel_args.h and metal/args/*.h."""
    out = {}
    for f in [build.ROOT / "metal" / "kernel_args.h", *sorted((build.ROOT / "metal" / "args").glob("*.h"))]:
        src = re.sub(r"//[^\n]*", "", f.read_text())
        for m in re.finditer(r"struct\s+(\w+)\s*\{([^}]*)\}", src):
            fields = []
            for decl in m.group(2).split(";"):
                d = re.fullmatch(r"\s*(\w+)\s+(\w+)\s*(?:\[(\d+)\])?\s*", decl)
                if not d:
                    if decl.strip():
                        raise ValueError(f"[metal_emu] cannot parse field '{decl.strip()}' of {m.group(1)}")
                    continue
                fmt = _FIELD[d.group(1)]
                fields += [(d.group(2) if not d.group(3) else f"{d.group(2)}[{i}]", fmt)
                           for i in range(int(d.group(3) or 1))]
            out[m.group(1)] = fields
    return out


def pack_args(struct_name: str, **values) -> bytes:
    """Packs one kernel argument struct; every field must be given (no silent zeros)."""
    fields = arg_structs()[struct_name]
    missing = [n for n, _ in fields if n not in values]
    extra = set(values) - {n for n, _ in fields}
    if missing or extra:
        raise ValueError(f"[metal_emu] {struct_name}: missing {missing}, unknown {sorted(extra)}")
    return struct.pack("<" + "".join(f for _, f in fields), *[values[n] for n, _ in fields])


def _dims(v) -> tuple[int, int, int]:
    v = (v,) if isinstance(v, int) else tuple(v)
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))


class Emulator:
    """In-process emulator (libmsl_emu.so)."""

    def __init__(self, lib: Path):
        self.path = lib
        self.lib = ctypes.CDLL(str(lib))
        self.lib.emu_kernel_name.restype = ctypes.c_char_p
        self.lib.emu_kernel_file.restype = ctypes.c_char_p
        self.lib.emu_last_error.restype = ctypes.c_char_p
        u32p = ctypes.POINTER(ctypes.c_uint32)
        self.lib.emu_dispatch.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, u32p,
                                          ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64), u32p,
                                          u32p, ctypes.c_int, u32p, ctypes.c_int, ctypes.c_uint64]

    def kernel_names(self) -> list[str]:
        return [self.lib.emu_kernel_name(i).decode() for i in range(self.lib.emu_kernel_count())]

    def dispatch(self, name: str, args: bytes | None, buffers: list[np.ndarray], grid, tg, tg_mem=(),
                 schedule: str = "forward", seed: int = 0) -> None:
        """Runs kernel `name`; buffers bind to indices 1..n and are updated in place.

        Each buffer is copied between sentinel guards; a kernel write outside its buffer fails.
        """
        regions, views = [], []
        for a in buffers:
            raw = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
            region = np.empty(raw.size + 2 * GUARD + 64, np.uint8)
            start = (-region.ctypes.data) % 64 + GUARD
            region[:] = 0xA5
            region[start:start + raw.size] = raw
            regions.append((region, start, raw.size))
        n = len(buffers)
        idx = (ctypes.c_uint32 * max(n, 1))(*range(1, n + 1))
        ptrs = (ctypes.c_void_p * max(n, 1))(*[r.ctypes.data + s for r, s, _ in regions])
        lens = (ctypes.c_uint64 * max(n, 1))(*[size for _, _, size in regions])
        g, t = (ctypes.c_uint32 * 3)(*_dims(grid)), (ctypes.c_uint32 * 3)(*_dims(tg))
        tgl = (ctypes.c_uint32 * max(len(tg_mem), 1))(*tg_mem)
        argbuf = ctypes.create_string_buffer(args, len(args)) if args is not None else None
        rc = self.lib.emu_dispatch(name.encode(), argbuf, len(args or b""), n, idx, ptrs, lens, g, t, len(tg_mem),
                                   tgl, SCHEDULES[schedule], seed)
        if rc:
            raise EmuError(self.lib.emu_last_error().decode())
        for i, ((region, start, size), a) in enumerate(zip(regions, buffers)):
            if np.any(region[:start] != 0xA5) or np.any(region[start + size:] != 0xA5):
                raise EmuError(f"{name}: write outside buffer({i + 1})")
            if a.flags.writeable:
                a.reshape(-1).view(np.uint8)[:] = region[start:start + size]


class SanitizedEmulator:
    """The same dispatch, run by the ASan+UBSan driver in a subprocess."""

    def __init__(self, exe: Path):
        self.exe = exe

    def dispatch(self, name: str, args: bytes | None, buffers: list[np.ndarray], grid, tg, tg_mem=(),
                 schedule: str = "forward", seed: int = 0) -> None:
        req = [struct.pack("<II", 0x31554D45, len(name)), name.encode(), struct.pack("<I", len(args or b"")),
               args or b"", struct.pack("<I", len(buffers))]
        for i, a in enumerate(buffers):
            raw = np.ascontiguousarray(a).tobytes()
            req += [struct.pack("<IQ", i + 1, len(raw)), raw]
        req += [struct.pack("<3I3II", *_dims(grid), *_dims(tg), len(tg_mem)), struct.pack(f"<{len(tg_mem)}I", *tg_mem),
                struct.pack("<iQ", SCHEDULES[schedule], seed)]
        with tempfile.TemporaryDirectory() as d:
            rq, out = Path(d) / "req", Path(d) / "out"
            rq.write_bytes(b"".join(req))
            env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0",
                       UBSAN_OPTIONS="print_stacktrace=1")
            r = subprocess.run([str(self.exe), str(rq), str(out)], capture_output=True, text=True, env=env)
            if r.returncode:
                raise EmuError(f"{name}: sanitized run failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
            data = out.read_bytes()
        pos = 0
        for a in buffers:
            nbytes = a.nbytes
            if a.flags.writeable:
                a.reshape(-1).view(np.uint8)[:] = np.frombuffer(data[pos:pos + nbytes], np.uint8)
            pos += nbytes


_cache: dict[str, object] = {}


def get(variant: str = "fast"):
    """The emulator (built on first use, cached across runs under build/metal_emu/)."""
    if variant not in _cache:
        p = build.build(variant)
        _cache[variant] = Emulator(p) if variant == "fast" else SanitizedEmulator(p)
    return _cache[variant]
