"""The Metal host off macOS: a clear error for device='metal', and the plain C++ part of the
host (op dispatch, kernel names, geometry) still compiles (syntax check; the .mm files need
Apple's SDK)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(sys.platform == "darwin", reason="off-macOS behaviour")
def test_device_metal_is_a_clear_error_off_macos():
    from eyas import _core

    with pytest.raises(ValueError, match=r"\[Device\].*metal.*macOS"):
        _core.Device("metal")


def test_host_cpp_compiles():
    src = "csrc/metal/ops.cpp"  # includes kernel_names.h, encoder.h, context.h
    cxx = shutil.which("clang++-19") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler")
    r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++",
                        f"-I{ROOT / 'csrc'}", f"-I{ROOT}", str(ROOT / src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
