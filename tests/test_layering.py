"""The package's layers import downward only (DESIGN §8), in Python and in C++.

Each source file belongs to a layer by its folder; a file may import its own layer and the ones
below it, never one above. A new file or import that breaks the order fails here with the edge.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / "python" / "eyas"
CSRC = ROOT / "csrc"

# Python: top-level module or package of python/eyas -> rank (lower = closer to the C++ core).
PY_RANK = {
    "_core": 0,
    "chat": 1, "tokenizer": 1, "models": 1, "sampling": 1,  # descriptions and text
    "arguments": 1,  # argument-parser policy: the CLI's and eyas.train's own entry point
    "loaders": 2,  # files -> descriptions, weights, tokenizer, template
    "drafters": 3,  # drafter checkpoints checked against a loaded target
    "speculative": 4,  # proposers, policy, rounds
    "generation": 5,  # the one generation seam
    "api": 6, "train": 6, "server": 6,  # server: the engine and HTTP API over loaded models
    "commands": 7, "cli": 7, "__init__": 7, "__main__": 7,
}

# C++: folder under csrc -> rank. `shared` is the repo-root metal/ headers (argument structs the
# host, the CPU kernels and the MSL sources all read).
CPP_RANK = {"shared": 0, "core": 0, "cpu": 1, "metal": 1, "ops": 2, "model": 3, "speculative": 3, "bindings": 4}
# What a backend (cpu, metal) implements: the op layer's backend interface, which itself reads core only.
BACKEND_INTERFACE = {"ops/backend.h", "ops/cpu_controls.h", "ops/attention_call.h", "ops/host_rows.h"}


def _py_top(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "eyas":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _py_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level eyas module) of every eyas import in the file, lazy ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, _py_top(a.name)) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "eyas":  # from eyas import _core, api ...
                out += [(node.lineno, a.name) for a in node.names]
            else:
                out.append((node.lineno, _py_top(node.module)))
    return [(n, m) for n, m in out if m is not None]


def _py_layer(path: Path, root: Path = PY) -> str:
    rel = path.relative_to(root)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_python_module_has_a_layer():
    missing = sorted({_py_layer(p) for p in PY.rglob("*.py")} - set(PY_RANK))
    assert not missing, f"python/eyas modules without a layer in PY_RANK: {missing}"


def test_python_imports_point_downward():
    bad = []
    for path in sorted(PY.rglob("*.py")):
        layer = _py_layer(path)
        for line, target in _py_imports(path):
            if target in PY_RANK and PY_RANK[target] > PY_RANK[layer]:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports eyas.{target}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _cpp_layer_of_include(inc: str) -> str | None:
    if (CSRC / inc).is_file():
        return inc.split("/")[0]
    if (ROOT / inc).is_file() and inc.startswith("metal/"):
        return "shared"
    return None  # a system or third-party header


def _cpp_sources():
    return sorted(p for p in CSRC.rglob("*") if p.suffix in (".h", ".cpp", ".mm"))


def test_every_cpp_folder_has_a_layer():
    folders = {p.relative_to(CSRC).parts[0] for p in _cpp_sources()}
    assert folders <= set(CPP_RANK), f"csrc folders without a layer: {sorted(folders - set(CPP_RANK))}"


def test_cpp_includes_point_downward():
    bad = []
    for path in _cpp_sources():
        layer = path.relative_to(CSRC).parts[0]
        for inc in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            target = _cpp_layer_of_include(inc)
            if target is None or CPP_RANK[target] <= CPP_RANK[layer]:
                continue
            if layer in ("cpu", "metal") and inc in BACKEND_INTERFACE:
                continue
            bad.append(f"{path.relative_to(ROOT)} ({layer}) includes {inc} ({target})")
    assert not bad, "upward includes:\n" + "\n".join(bad)


def test_backend_interface_reads_only_the_core():
    for inc in BACKEND_INTERFACE:
        for dep in INCLUDE.findall((CSRC / inc).read_text(encoding="utf-8")):
            assert _cpp_layer_of_include(dep) in (None, "core", "shared") or dep in BACKEND_INTERFACE, \
                f"{inc} includes {dep}"


def test_the_checks_see_a_violation(tmp_path):
    """The scanners find an upward edge when there is one (so a green run means something)."""
    (tmp_path / "loaders").mkdir()
    f = tmp_path / "loaders" / "x.py"
    f.write_text("def f():\n    from eyas.api import load\n    from eyas import generation\n")
    assert [m for _, m in _py_imports(f)] == ["api", "generation"]
    assert _py_layer(f, tmp_path) == "loaders" and PY_RANK["api"] > PY_RANK["loaders"]
    assert _cpp_layer_of_include("model/transformer.h") == "model"
    assert _cpp_layer_of_include("metal/kernel_args.h") == "shared"
    assert CPP_RANK["model"] > CPP_RANK["ops"]
