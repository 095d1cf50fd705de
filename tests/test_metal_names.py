"""The kernel names the Metal host can request (csrc/metal/kernel_names.h) and the
[[host_name]]s in metal/*.metal are the same set, and the emulator built every one of them."""

import re
from pathlib import Path

from tests.metal_emu import lower
from tests.metal_emu.fixtures import emulator  # noqa: F401 (pytest fixture)

ROOT = Path(__file__).resolve().parent.parent
METAL = ROOT / "metal"


def host_kernel_names() -> list[str]:
    """kKernelNames in csrc/metal/kernel_names.h."""
    src = (ROOT / "csrc" / "metal" / "kernel_names.h").read_text()
    return re.findall(r'"(\w+)"', re.search(r"kKernelNames\[\]\s*=\s*\{(.*?)\};", src, re.S).group(1))


def _source_names() -> dict[str, str]:
    names = {}
    for f in sorted(METAL.glob("*.metal")):
        for n in lower.host_names(f.read_text()):
            assert n not in names, f"{n} defined in {names.get(n)} and {f.name}"
            names[n] = f.name
    return names


def test_every_host_name_exists_in_the_sources():
    missing = sorted(set(host_kernel_names()) - set(_source_names()))
    assert not missing, f"host requests kernels no .metal file defines: {missing}"


def test_every_source_kernel_is_reachable_from_the_host():
    unused = sorted(set(_source_names()) - set(host_kernel_names()))
    assert not unused, f"kernels missing from kKernelNames: {unused}"


def test_host_list_has_no_duplicates():
    names = host_kernel_names()
    assert len(names) == len(set(names))


def test_emulator_registered_every_host_name(emulator):
    missing = sorted(set(host_kernel_names()) - set(emulator.kernel_names()))
    assert not missing, missing
