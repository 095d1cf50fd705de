"""The CPU parity cases (tests/parity/cases_*.py) as the Metal tests use them: the same inputs,
numpy references and tolerances, run through the real engine on a Metal device (the ops take
the default device when called without an encoder; see `on_device`)."""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import zlib

import numpy as np

import tests.parity as parity
from eyas import _core

# Ops with a Metal kernel; the other parity ops run as host steps on a Metal device.
KERNEL_OPS = ("rms_norm", "rope", "add", "silu_mul", "silu_mul_halves", "sigmoid_mul", "scale", "softmax", "argmax", "topk", "attention",
              "kv_write", "kv_move_rows", "matmul", "embedding")


def all_cases() -> list:
    cases = []
    for info in sorted(pkgutil.iter_modules(parity.__path__), key=lambda i: i.name):
        if info.name.startswith("cases_"):
            cases += importlib.import_module(f"tests.parity.{info.name}").CASES
    return cases


def inputs(case) -> dict:
    """Fresh inputs of a case, the same on every run (ops may update some in place)."""
    return case.make_inputs(np.random.default_rng(zlib.crc32(case.id.encode())))


@contextlib.contextmanager
def on_device(device):
    """Runs the enclosed ops (and models built inside) on `device`, then restores the default."""
    before = _core.get_default_device()
    _core.set_default_device(device)
    try:
        yield device
    finally:
        _core.set_default_device(before)


def run(device, case, a: dict, **hooks):
    """case.run(a) on `device` with its test hooks set for the call (and reset after)."""
    if hooks:
        device._set_test_hooks(**hooks)
    try:
        with on_device(device):
            return case.run(a)
    finally:
        if hooks:
            device._set_test_hooks()


def check(case, out, ref, what: str) -> None:
    if isinstance(ref, tuple):
        for i, (o, r) in enumerate(zip(out, ref)):
            parity.assert_close(o, r, case.tol, f"{what}[{i}]")
    else:
        parity.assert_close(out, ref, case.tol, what)
