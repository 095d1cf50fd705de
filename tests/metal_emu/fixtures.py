"""pytest fixtures for the emulator: built once per session (cached on disk across sessions).
Skipped only when clang-19 is missing; EYAS_REQUIRE_METAL_EMU=1 (set by CI) makes that a failure."""

import os

import pytest

from tests.metal_emu import build, runner


def _require(variant: str):
    if not build.clang_available():
        msg = f"MSL emulator needs {build.CLANG} (install with .ci/setup-metal-emu)"
        if os.environ.get("EYAS_REQUIRE_METAL_EMU") == "1":
            pytest.fail(msg + "; EYAS_REQUIRE_METAL_EMU=1 requires it")
        pytest.skip(msg)
    return runner.get(variant)


@pytest.fixture(scope="session")
def emulator():
    return _require("fast")


@pytest.fixture(scope="session")
def sanitized_emulator():
    return _require("asan")


@pytest.fixture(scope="session")
def metal_device(request):
    """Device('metal') with the engine's real Metal backend: on the emulator driver, or on Apple's
    driver (the GPU) when EYAS_TEST_METAL=apple (a macOS build; pyproject's cibuildwheel test)."""
    from eyas import _core

    if os.environ.get("EYAS_TEST_METAL") == "apple":
        device = _core.Device("metal", 1)
        assert device.driver == "apple"
        return device
    return _core.Device("metal", 1, emulator=str(request.getfixturevalue("emulator").path))
