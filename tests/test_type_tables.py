"""The GGML type facts agree wherever a language boundary forces a second spelling of them.

Python takes ids, names and block sizes from the `gguf` package (eyas.loaders.dtypes); C++ has one
table (csrc/core/dtype.h kTypeTable, which cpu/quant/formats.h reads); Metal Shading Language
cannot include that header, so metal/common.h spells the block layouts as structs. This test holds
the C++ table and the Metal structs to gguf's values, and the runtime's type list to eyas's.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

from eyas.loaders.dtypes import SUPPORTED

ROOT = Path(__file__).resolve().parent.parent
EYAS_ONLY = {"U8"}  # ids eyas adds for masks; not GGML types


def cpp_table() -> dict[str, tuple[int, int, int]]:
    """name -> (id, block elements, block bytes) from csrc/core/dtype.h."""
    src = (ROOT / "csrc/core/dtype.h").read_text()
    enum = re.search(r"enum class DType : int32_t \{(.*?)\};", src, re.S).group(1)
    ids = {n: int(v) for n, v in re.findall(r"(\w+) = (\d+)", enum)}
    rows = re.findall(r'\{DType::(\w+), \{"(\w+)", (\d+), (\d+)\}\}', src)
    assert rows, "kTypeTable not found in csrc/core/dtype.h"
    out = {}
    for enum_name, name, elems, nbytes in rows:
        assert enum_name == name, f"kTypeTable row DType::{enum_name} is named {name!r}"
        assert name not in out, f"{name} appears twice in kTypeTable"
        out[name] = (ids[enum_name], int(elems), int(nbytes))
    assert set(out) == set(ids), f"enum and table differ: {set(ids) ^ set(out)}"
    return out


_FIELD_BYTES = {"half": 2, "char": 1, "uchar": 1}


def _count(expr: str, macros: dict[str, int]) -> int:
    """An array length as common.h writes them: a number or macro, optionally `/ divisor`."""
    num, _, div = expr.partition("/")
    value = lambda t: macros[t.strip()] if t.strip() in macros else int(t)  # noqa: E731
    return value(num) // (value(div) if div else 1)


def metal_blocks() -> dict[str, tuple[int, int]]:
    """GGML name -> (block elements, sizeof) of metal/common.h's block_* structs (fields of 1 and 2
    bytes only, so no padding beyond 2-byte alignment)."""
    src = (ROOT / "metal/common.h").read_text()
    macros = {n: int(v) for n, v in re.findall(r"#define (QK\w*) (\d+)", src)}
    elems = {"K": macros["QK_K"]}
    out = {}
    for name, body in re.findall(r"struct block_(\w+) \{(.*?)\};", src, re.S):
        size = 0
        for ftype, _, count in re.findall(r"(\w+) (\w+)(?:\[([^\]]+)\])?;", body):
            n = _count(count, macros) if count else 1
            size += _FIELD_BYTES[ftype] * n
        size += size % 2
        ggml = name.upper()
        out[ggml] = (elems.get(ggml.split("_")[1], macros["QK"]), size)
    return out


def test_cpp_table_is_ggmls():
    for name, (id_, elems, nbytes) in cpp_table().items():
        if name in EYAS_ONLY:
            assert id_ not in {int(t) for t in GGMLQuantizationType}, f"{name} reuses GGML id {id_}"
            continue
        t = GGMLQuantizationType[name]
        assert id_ == int(t), f"{name}: C++ id {id_}, GGML id {int(t)}"
        assert (elems, nbytes) == GGML_QUANT_SIZES[t], f"{name}: C++ {(elems, nbytes)}, GGML {GGML_QUANT_SIZES[t]}"


def test_runtime_weight_types_are_in_the_cpp_table():
    table = cpp_table()
    for id_, name in SUPPORTED.items():
        assert table[name][0] == id_, name


def test_metal_block_structs_match_ggml():
    blocks = metal_blocks()
    quantized = [n for n in SUPPORTED.values() if GGML_QUANT_SIZES[GGMLQuantizationType[n]][0] > 1]
    assert sorted(blocks) == sorted(quantized), "metal/common.h and the runtime's quantized types differ"
    for name, got in blocks.items():
        assert got == GGML_QUANT_SIZES[GGMLQuantizationType[name]], f"block_{name.lower()}: {got}"


def test_core_dtype_enum_matches_the_header():
    from eyas import _core

    members = {n: int(v) for n, v in _core.DType.__members__.items()}
    assert members == {n: v[0] for n, v in cpp_table().items()}


def test_runtime_matmul_accepts_exactly_the_supported_types():
    """The runtime's own list (ops::matmul_supports) and eyas.loaders.dtypes.SUPPORTED are the same set."""
    from eyas import _core

    K = 256  # a whole block of every type
    x = np.ones((1, K), np.float32)
    for name, (id_, elems, nbytes) in cpp_table().items():
        w = np.zeros(K // elems * nbytes, np.uint8)
        if id_ in SUPPORTED:
            assert _core.ops.matmul(x, w, id_, [1, K]).shape == (1, 1), name
        else:
            with pytest.raises(ValueError, match=r"\[matmul\] unsupported weight type"):
                _core.ops.matmul(x, w, id_, [1, K])
