"""Builds the MSL emulator: lowers every .metal file, compiles it with clang-19 against the
shim and links it with the fiber executor.

Two products, cached under build/metal_emu/<hash of all inputs>/:
  libmsl_emu.so   loaded in-process through ctypes (fast path for the parity tests)
  msl_emu_asan    the same kernels + executor + driver.cpp under ASan and UBSan, run as a
                  subprocess (the sanitizer runtimes cannot be loaded into a running Python)
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.metal_emu import lower

ROOT = Path(__file__).resolve().parents[2]
EMU = Path(__file__).resolve().parent
CLANG = os.environ.get("EYAS_METAL_EMU_CLANG", "clang++-19")

# Half math rounds after every operation as the GPU's half ALU does; no FP contraction, so
# float results do not depend on the optimiser; unknown MSL attributes are validated by lower.py.
COMMON_FLAGS = ["-std=c++17", "-fPIC", "-g", "-Wall", "-Wno-unknown-attributes", "-Wno-unused-function",
                "-Wno-unused-variable", "-Wno-unused-parameter", "-ffp-contract=off",
                "-Xclang", "-ffloat16-excess-precision=none",
                f"-I{EMU / 'shim'}", f"-I{ROOT / 'metal'}", f"-I{ROOT}"]
VARIANTS = {
    "fast": ["-O2"],
    "asan": ["-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
}


def clang_available() -> bool:
    return shutil.which(CLANG) is not None


def kernel_sources(extra: list[Path] | None = None) -> list[Path]:
    """Shipped kernels plus test-only kernels (deliberately broken ones live in tests/metal_emu/kernels)."""
    return sorted((ROOT / "metal").glob("*.metal")) + sorted((EMU / "kernels").glob("*.metal")) + (extra or [])


def _inputs() -> list[Path]:
    files = kernel_sources() + sorted((ROOT / "metal").rglob("*.h")) + sorted((EMU / "shim").iterdir())
    return files + [EMU / "executor.cpp", EMU / "driver.cpp", EMU / "lower.py", Path(__file__)]


def _digest() -> str:
    h = hashlib.sha256(CLANG.encode())
    for f in _inputs():
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"metal_emu build failed:\n{' '.join(cmd)}\n{r.stderr[-8000:]}")


def _build(out: Path, variant: str) -> None:
    flags = COMMON_FLAGS + VARIANTS[variant]
    objs, jobs = [], []
    for src in kernel_sources():
        cpp = out / f"{src.stem}.{variant}.cpp"
        if not cpp.exists():
            cpp.write_text(lower.lower(src.read_text(), str(src))[0])
        obj = out / f"{src.stem}.{variant}.o"
        objs.append(obj)
        jobs.append([CLANG, *flags, "-c", str(cpp), "-o", str(obj)])
    exe = EMU / "executor.cpp"
    objs.append(out / f"executor.{variant}.o")
    jobs.append([CLANG, *flags, "-c", str(exe), "-o", str(objs[-1])])
    if variant == "asan":
        objs.append(out / "driver.asan.o")
        jobs.append([CLANG, *flags, "-c", str(EMU / "driver.cpp"), "-o", str(objs[-1])])
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(_run, jobs))
    if variant == "fast":
        _run([CLANG, *flags, "-shared", *map(str, objs), "-o", str(out / "libmsl_emu.so")])
    else:
        _run([CLANG, *flags, *map(str, objs), "-o", str(out / "msl_emu_asan")])


def build(variant: str = "fast") -> Path:
    """Returns the built library (fast) or sanitizer executable (asan); rebuilds when any input changed."""
    if not clang_available():
        raise FileNotFoundError(f"{CLANG} not found (install it with .ci/setup-metal-emu)")
    out = ROOT / "build" / "metal_emu" / _digest()
    product = out / ("libmsl_emu.so" if variant == "fast" else "msl_emu_asan")
    if product.exists():
        return product
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent pytest processes build once
        if not product.exists():
            _build(out, variant)
    return product


if __name__ == "__main__":
    import sys

    for v in sys.argv[1:] or ["fast"]:
        print(build(v))
