"""Choosing the device from the Python API and the CLI: eyas.load(device=...) and --device run
the model (and any later load) on Metal, here through the MSL emulator, with the CPU's output."""

from __future__ import annotations

import json

import pytest

import eyas
from eyas import _core
from eyas.cli import main
from tests.fixtures import tiny_models
from tests.metal_emu.fixtures import emulator  # noqa: F401 (pytest fixture)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(tiny_models.random_llama_gguf(tmp_path_factory.mktemp("dev") / "tiny.gguf", qtype="Q8_0"))


@pytest.fixture(autouse=True)
def restore_default_device():
    before = _core.get_default_device()
    yield
    _core.set_default_device(before)


def test_load_on_metal_equals_the_cpu(tiny, emulator, monkeypatch):
    monkeypatch.setenv("EYAS_METAL_EMULATOR", str(emulator.path))
    want = eyas.load(tiny, drafter="none", device="cpu", threads=1).generate("hello world", max_tokens=6).tokens
    model = eyas.load(tiny, drafter="none", device="metal", threads=1)
    assert _core.get_default_device().backend == "metal"
    assert model.generate("hello world", max_tokens=6).tokens == want
    eyas.load(tiny, drafter="none", device="cpu")  # back to the CPU
    assert _core.get_default_device().backend == "cpu"


def test_sampled_generation_on_metal_equals_the_cpu(tiny, emulator, monkeypatch):
    monkeypatch.setenv("EYAS_METAL_EMULATOR", str(emulator.path))
    runs = [eyas.load(tiny, drafter="none", device=d, threads=1).generate(
        "hello world", max_tokens=8, temperature=0.8, top_p=0.9, seed=3).tokens for d in ("cpu", "metal")]
    assert runs[0] == runs[1]


def test_bad_devices_are_clear_errors(tiny, monkeypatch):
    with pytest.raises(ValueError, match=r"device must be one of \('cpu', 'metal'\), got 'gpu'"):
        eyas.load(tiny, drafter="none", device="gpu")
    monkeypatch.delenv("EYAS_METAL_EMULATOR", raising=False)
    import sys

    if sys.platform != "darwin":
        with pytest.raises(ValueError, match=r"EYAS_METAL_EMULATOR"):
            eyas.load(tiny, drafter="none", device="metal")


def test_cli_device_metal(tiny, emulator, monkeypatch, capsys):
    outputs = {}
    for device in ("cpu", "metal"):
        monkeypatch.setenv("EYAS_METAL_EMULATOR", str(emulator.path))
        assert main(["generate", "Hello world", "--model", tiny, "--max-tokens", "5", "--json", "--threads", "1",
                     "--device", device]) == 0
        outputs[device] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["tokens"]
    assert outputs["cpu"] == outputs["metal"]
