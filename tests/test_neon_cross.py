"""The AArch64 NEON matmul path, cross-compiled and run under qemu: same bits as the scalar path
(on ARM) and as the native x86 kernels."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from eyas import _core
from tests import quant_ref as qr

ROOT = Path(__file__).resolve().parent.parent
CXX, QEMU = "aarch64-linux-gnu-g++", "qemu-aarch64"
SOURCES = (["csrc/core/thread_pool.cpp", "csrc/core/dtype.cpp", "csrc/cpu/matmul.cpp", "tests/neon/driver.cpp"]
           + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc/cpu/quant").glob("*.cpp")))


@pytest.fixture(scope="module")
def driver():
    if not (shutil.which(CXX) and shutil.which(QEMU)):
        if os.environ.get("EYAS_REQUIRE_NEON_CROSS") == "1":
            pytest.fail(f"{CXX} and {QEMU} are required (bash .ci/setup-neon-cross)")
        pytest.skip(f"needs {CXX} and {QEMU} (bash .ci/setup-neon-cross)")
    digest = hashlib.sha256()
    for p in sorted((ROOT / "csrc").rglob("*")) + [ROOT / "tests/neon/driver.cpp", ROOT / "metal/args/matmul.h"]:
        if p.is_file():
            digest.update(p.read_bytes())
    out = ROOT / "build" / "neon_cross" / digest.hexdigest()[:16] / "driver"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [CXX, "-O2", "-std=c++17", "-static", "-pthread", "-fno-fast-math", "-ffp-contract=off", "-Icsrc", "-I.",
               *SOURCES, "-o", str(out)]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=600)
    return out


def _run(driver, tmp_path, isa, wtype, w, x, n, k):
    wf, xf, yf = tmp_path / "w.bin", tmp_path / "x.bin", tmp_path / f"y_{isa}.bin"
    w.tofile(wf)
    x.tofile(xf)
    r = subprocess.run([QEMU, "-cpu", "max", str(driver), isa, str(int(getattr(_core.DType, wtype))), str(n), str(k),
                        str(len(x)), str(wf), str(xf), str(yf)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == isa  # the driver really ran that path
    return np.fromfile(yf, np.float32).reshape(len(x), n)


@pytest.mark.parametrize("wtype", qr.ALL_TYPES)
def test_neon_matches_scalar_and_x86(driver, tmp_path, wtype):
    rng = np.random.default_rng(len(wtype))
    k = qr.edge_k(wtype)
    n = 37
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((7, k), dtype=np.float32)
    neon = _run(driver, tmp_path, "neon", wtype, w, x, n, k)
    scalar = _run(driver, tmp_path, "scalar", wtype, w, x, n, k)
    assert np.array_equal(neon, scalar)
    assert np.array_equal(neon, _core.ops.matmul(x, w, wtype, (n, k)))


@pytest.mark.parametrize("wtype", qr.K_TYPES)
def test_neon_k_quants_match_scalar_over_rows(driver, tmp_path, wtype):
    # The SDOT K-quant terms (kquant_neon.h) at T = 1..40 and an odd N; activations of very
    # different magnitude (large per-16 sums) and a 5-block K.
    rng = np.random.default_rng(17)
    n, k = 19, 1280
    w = qr.random_weights(rng, wtype, n, k)
    x = rng.standard_normal((40, k), dtype=np.float32)
    x[1] *= 1e-4
    x[33] = np.abs(x[33]) * 1e3
    for t in (1, 2, 3, 5, 8, 17, 40):
        neon = _run(driver, tmp_path, "neon", wtype, w, x[:t], n, k)
        assert np.array_equal(neon, _core.ops.matmul(x[:t], w, wtype, (n, k))), f"{wtype} T={t}"


@pytest.mark.parametrize("wtype", qr.K_TYPES)
def test_neon_k_pack_extreme_bytes_exact(driver, tmp_path, wtype):
    # The SDOT kernels over the K repack (kqpack_neon.h) with every quant and scale at its largest
    # (Q6_K scales at -128 on every other row): two packed 16-column groups and 3 GGUF-row columns.
    n, k = 35, 512
    w = qr.k_extreme_weights(wtype, n, k)
    x = qr.extreme_activations(9, k, mixed_from=5)
    for t in (1, 2, 5, 9):
        neon = _run(driver, tmp_path, "neon", wtype, w, x[:t], n, k)
        assert np.array_equal(neon, _core.ops.matmul(x[:t], w, wtype, (n, k))), f"{wtype} T={t}"


@pytest.mark.parametrize("wtype", qr.LEGACY_TYPES)
def test_neon_legacy_packs_over_rows(driver, tmp_path, wtype):
    # The SDOT kernels over the Q4 / Q5 / Q8 repacks (q4pack_neon.h): one row (the whole group a pass),
    # 2-4 rows and their remainders, random and all-largest quants (0xFF: Q8_0's -1, nibbles 15,
    # Q5's fifth bits set) against +-127 activations.
    rng = np.random.default_rng(23)
    n, k = 35, 256
    for w in (qr.random_weights(rng, wtype, n, k), qr.max_weights(wtype, n, k)):
        x = rng.standard_normal((9, k), dtype=np.float32)
        x[2] = np.where(np.arange(k) % 3 == 0, -3.0, 3.0)
        for t in (1, 2, 3, 5, 9):
            neon = _run(driver, tmp_path, "neon", wtype, w, x[:t], n, k)
            assert np.array_equal(neon, _core.ops.matmul(x[:t], w, wtype, (n, k))), f"{wtype} T={t}"
