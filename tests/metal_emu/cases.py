"""Maps the CPU parity cases (tests/parity/cases_*.py) onto the Metal host: the same inputs,
numpy references and tolerances, run through the emulated kernels."""

from __future__ import annotations

import importlib
import pkgutil
import re

import numpy as np

import tests.parity as parity


def _scale_factor(case) -> float:
    # The scale cases keep s in a closure; their reference is x * s, so evaluate it at x = 1.
    return float(case.ref({"x": np.ones((1, 1), np.float32)})[0, 0])


def _label_num(label: str, key: str) -> str:
    return re.search(rf"(?:^|-){key}([\w.]+)", label).group(1)


def run(host, case, a: dict, variant: str | None = None):
    """Runs parity case `case` with inputs `a` on the Metal host; returns what case.run returns."""
    op, label = case.op, case.label
    if op == "rms_norm":
        return host.rms_norm(a["x"], a["w"], a["eps"])
    if op == "rope":
        return host.rope(a["x"], a["pos"], a["f"], label.split("-")[0])
    if op in ("add", "silu_mul", "sigmoid_mul"):
        return host.elementwise(op, a["a"], a["b"])
    if op == "scale":
        return host.elementwise("scale", a["x"], s=_scale_factor(case))
    if op == "softmax":
        return host.softmax(a["x"], float(re.search(r"-t([\d.]+)", label).group(1)), label.endswith("-log"))
    if op == "argmax":
        return host.argmax(a["x"])
    if op == "topk":
        return host.topk(a["x"], int(re.search(r"-k(\d+)", label).group(1)))
    if op == "attention":
        return host.attention(a["q"], a["k"], a["v"], a["prefix_len"], a["mask"])
    if op == "kv_write":
        return host.kv_write(a["new"], a["cache"].copy(), a["start"])
    if op == "kv_move_rows":
        return host.kv_move_rows(a["cache"].copy(), a["src"], a["dst"])
    if op == "matmul":
        wtype, t, n, k = re.fullmatch(r"(\w+?)-(\d+)x(\d+)x(\d+)", label).groups()
        return host.matmul(a["x"], a["w"], wtype, int(n), int(k), variant)
    if op == "embedding":
        wtype, v, k = re.fullmatch(r"(\w+?)-(\d+)x(\d+)-T\d+", label).groups()
        return host.embedding(a["w"], wtype, int(v), int(k), a["ids"])
    raise KeyError(op)


OPS = ("rms_norm", "rope", "add", "silu_mul", "sigmoid_mul", "scale", "softmax", "argmax", "topk", "attention",
       "kv_write", "kv_move_rows", "matmul", "embedding")


def all_cases() -> list:
    cases = []
    for info in sorted(pkgutil.iter_modules(parity.__path__), key=lambda i: i.name):
        if info.name.startswith("cases_"):
            mod = importlib.import_module(f"tests.parity.{info.name}")
            cases += [c for c in mod.CASES if c.op in OPS]
    return cases


def check(case, out, ref, what: str) -> None:
    if isinstance(ref, tuple):
        for i, (o, r) in enumerate(zip(out, ref)):
            parity.assert_close(o, r, case.tol, f"{what}[{i}]")
    else:
        parity.assert_close(out, ref, case.tol, what)
