"""Table-driven op parity: every case pairs an eyas op with a numpy reference.

Each `cases_<family>.py` module defines CASES, a list of ParityCase. tests/test_op_parity.py
runs every case on every available backend and compares with the tolerance of its `tol` key
in TOLERANCES (the one table of tolerances in the suite).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

# name -> (max abs error, max error relative to max|ref|); "exact" means bit-identical.
TOLERANCES: dict[str, tuple[float, float]] = {
    "exact": (0.0, 0.0),
    "f32": (1e-5, 1e-5),
    "f32_reduce": (1e-4, 1e-5),  # long reductions: summation order differs from numpy's
    "f16": (1e-3, 2e-3),
    "bf16": (1e-2, 1e-2),
    "quant": (2e-3, 2e-3),  # quantized weights vs a dequantize-then-matmul reference
    "attention": (1e-5, 1e-5),
}


@dataclasses.dataclass
class ParityCase:
    op: str  # kernel family name, e.g. "rms_norm"
    label: str  # shape/dtype description, part of the test id
    make_inputs: Callable[[np.random.Generator], dict[str, Any]]
    run: Callable[[dict[str, Any]], Any]  # runs the eyas CPU op
    ref: Callable[[dict[str, Any]], Any]  # numpy reference
    tol: str = "f32"

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}"


def assert_close(out, ref, tol: str, what: str = "") -> None:
    out = np.asarray(out)
    ref = np.asarray(ref)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != reference {ref.shape}"
    if tol == "exact":
        assert np.array_equal(out, ref), f"{what}: not bit-identical"
        return
    atol, rtol = TOLERANCES[tol]
    assert np.all(np.isfinite(out)), f"{what}: non-finite output"
    err = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64)))) if out.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    assert err <= atol + rtol * scale, f"{what}: max abs error {err:.3g} > {atol} + {rtol}*{scale:.3g}"
