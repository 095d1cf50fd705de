"""The Apple driver (csrc/metal/driver_apple.mm) cannot be built off macOS, but it can be parsed:
clang-19 checks it as Objective-C++ against a test-only stand-in of the Foundation and Metal
declarations it uses (tests/metal_stub), with warnings as errors, so a misspelt selector, a wrong
argument type or a C++ error in the driver fails here. The stand-in can drift from Apple's headers;
only a macOS build (pyproject's cibuildwheel configuration) proves those."""

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.metal_emu import build
from tests.metal_emu.fixtures import emulator  # noqa: F401 (pytest fixture: requires clang-19 like the emulator)

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "csrc" / "metal" / "driver_apple.mm"


def _check(source: Path) -> subprocess.CompletedProcess:
    gcc_include = subprocess.run(["gcc", "-print-file-name=include"], capture_output=True, text=True).stdout.strip()
    return subprocess.run([build.CLANG, "-std=c++17", "-fsyntax-only", "-x", "objective-c++", "-fobjc-runtime=gcc",
                           "-fno-objc-arc", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'tests' / 'metal_stub'}",
                           f"-I{gcc_include}", f"-I{ROOT / 'csrc'}", f"-I{ROOT}", str(source)],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def objc_toolchain(emulator):  # noqa: F811
    if not shutil.which("gcc"):
        pytest.fail("gcc is missing: it locates the Objective-C runtime headers (libobjc-12-dev)")
    include = subprocess.run(["gcc", "-print-file-name=include"], capture_output=True, text=True).stdout.strip()
    if not (Path(include) / "objc" / "objc.h").exists():
        pytest.fail("the Objective-C runtime headers are missing (apt: libobjc-12-dev; .ci/setup-metal-emu)")


def test_the_apple_driver_parses(objc_toolchain):
    r = _check(DRIVER)
    assert r.returncode == 0, r.stderr


def test_the_check_sees_a_misspelt_selector(objc_toolchain, tmp_path):
    bad = tmp_path / "driver_apple.mm"
    bad.write_text(DRIVER.read_text().replace("[enc endEncoding]", "[enc endEncodng]"))
    r = _check(bad)
    assert r.returncode != 0 and "endEncodng" in r.stderr
