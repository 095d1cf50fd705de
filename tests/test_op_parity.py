"""Every op against its numpy reference over shapes that hit every code path."""

import importlib
import pkgutil

import numpy as np
import pytest

import tests.parity as parity

CASES = []
for info in sorted(pkgutil.iter_modules(parity.__path__), key=lambda i: i.name):
    if info.name.startswith("cases_"):
        CASES.extend(importlib.import_module(f"tests.parity.{info.name}").CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cpu_matches_reference(case):
    rng = np.random.default_rng(abs(hash(case.id)) % (2**32))
    inputs = case.make_inputs(rng)
    out = case.run(inputs)
    ref = case.ref(inputs)
    if isinstance(ref, tuple):
        for i, (o, r) in enumerate(zip(out, ref)):
            parity.assert_close(o, r, case.tol, f"{case.id}[{i}]")
    else:
        parity.assert_close(out, ref, case.tol, case.id)
