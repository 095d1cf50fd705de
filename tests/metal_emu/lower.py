"""Lowers an MSL kernel file to C++ for the emulator, keeping line numbers.

Only what macros cannot express is rewritten (reference: docs/metal.md, "MSL subset"):
`[[threadgroup(N)]]` parameter attributes, body `threadgroup T name[N];` declarations and
`template [[host_name("x")]] ...;` instantiation lines. Binding stubs that read each kernel's
parameters from the current dispatch are appended. Constructs outside the subset (vector
C-style casts, half literals, function constants, unknown attributes) are rejected loudly.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

BUILTINS = {
    "thread_position_in_grid", "thread_position_in_threadgroup", "threadgroup_position_in_grid",
    "threads_per_threadgroup", "threadgroups_per_grid", "threads_per_grid", "thread_index_in_threadgroup",
    "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "threads_per_simdgroup",
    "simdgroups_per_threadgroup",
}
VEC = r"(?:float|half|bfloat|int|uint|short|ushort|char|uchar|long|ulong)[234]"


class LowerError(ValueError):
    pass


@dataclasses.dataclass
class Kernel:
    fn: str  # function name
    params: list[tuple[str, int | str]]  # ("buffer", i) | ("threadgroup", i) | ("builtin", name)
    is_template: bool
    line: int


def _strip_comments(src: str) -> str:
    """Replaces comments with spaces, keeping every offset and newline in place."""

    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, src, flags=re.S)


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


def _line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def lower(src: str, path: str) -> tuple[str, list[tuple[str, str, Kernel]]]:
    """Returns (C++ text, [(host_name, callable expression, Kernel)])."""
    code = _strip_comments(src)
    name = Path(path).name

    def reject(pos: int, what: str) -> None:
        raise LowerError(f"{name}:{_line_of(code, pos)}: {what} is outside the emulated MSL subset")

    for pat, what in [
        (rf"\(\s*(?:const\s+)?{VEC}\s*\)\s*[\w(]", "a C-style vector cast (write float4(x))"),
        (rf"static_cast\s*<\s*{VEC}\s*>", "static_cast to a vector type (write float4(x))"),
        (r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?h\b", "a half literal (write half(1.0f))"),
        (r"function_constant", "a function constant"),
        (r"\bsimdgroup_(?:float|half|bfloat)8x8\b|\bsimdgroup_matrix\b", "simdgroup_matrix"),
    ]:
        m = re.search(pat, code)
        if m:
            reject(m.start(), what)

    kernels: dict[str, Kernel] = {}
    out = list(src)  # edits keep every newline in place

    def replace(start: int, end: int, text: str) -> None:
        assert "\n" not in text
        nl = src.count("\n", start, end)
        out[start:end] = [""] * (end - start)
        out[start] = text + "\n" * nl

    edits: list[tuple[int, int, str]] = []
    for m in re.finditer(r"\bkernel\s+void\s+(\w+)\s*\(", code):
        fn = m.group(1)
        depth, i = 1, m.end()
        while depth:
            if i >= len(code):
                reject(m.start(), "an unterminated kernel parameter list")
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        params = []
        for p in _split_top(code[m.end():i - 1]):
            a = re.search(r"\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]\s*$", p)
            if not a:
                reject(m.start(), f"kernel parameter '{p.strip()}' without an attribute")
            attr, num = a.group(1), a.group(2)
            if attr in ("buffer", "threadgroup"):
                if num is None:
                    reject(m.start(), f"[[{attr}]] without an index")
                params.append((attr, int(num)))
            elif attr in BUILTINS:
                params.append(("builtin", attr))
            else:
                reject(m.start(), f"unknown attribute [[{attr}]]")
        for t in re.finditer(r"\[\[\s*threadgroup\s*\(\s*(\d+)\s*\)\s*\]\]", code[m.end():i]):
            edits.append((m.end() + t.start(), m.end() + t.end(), f"[[msl_tg_arg({t.group(1)})]]"))
        before = code[:m.start()].rstrip()
        is_template = bool(re.search(r"template\s*<[^;{}]*>$", before))
        if fn in kernels:
            reject(m.start(), f"a second kernel named {fn}")
        kernels[fn] = Kernel(fn, params, is_template, _line_of(code, m.start()))

    inst: list[tuple[str, str, Kernel]] = []
    for m in re.finditer(r"^[ \t]*template\s*\[\[\s*host_name\s*\(\s*\"([^\"]+)\"\s*\)\s*\]\]([^;]*);", code, re.M):
        host, rest = m.group(1), m.group(2)
        d = re.fullmatch(r"\s*(?:\[\[\s*kernel\s*\]\]|kernel)\s+decltype\s*\(\s*(\w+)\s*(<.*>)\s*\)\s*(\w+)\s*(<.*>)\s*",
                         rest, re.S)
        if not d or d.group(1) != d.group(3) or d.group(2).replace(" ", "") != d.group(4).replace(" ", ""):
            reject(m.start(), "an instantiation not of the form `template [[host_name(\"x\")]] kernel "
                              "decltype(f<A>) f<A>;`")
        fn = d.group(1)
        if fn not in kernels or not kernels[fn].is_template:
            reject(m.start(), f"an instantiation of unknown kernel template {fn}")
        inst.append((host, fn + d.group(2), kernels[fn]))
        edits.append((m.start(), m.end(), ""))
    for k in kernels.values():
        if not k.is_template:
            inst.append((k.fn, k.fn, k))

    for m in re.finditer(r"\bthreadgroup\s+([^;\n()=*&,\[]+?)\s+(\w+)\s*((?:\[[^\]\n]+\])+)\s*([;,])", code):
        if m.group(4) == ",":
            reject(m.start(), "a multi-declarator threadgroup declaration")
        edits.append((m.start(), m.end(), f"MSL_TG_ARRAY({m.group(1)}, {m.group(2)}, {m.group(3)});"))

    for start, end, text in sorted(edits, reverse=True):
        replace(start, end, text)
    body = "".join(out)

    names = [h for h, _, _ in inst]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise LowerError(f"{name}: duplicate host_name {sorted(dup)}")

    stubs = ["", '#include "msl_end.h"', "namespace {"]
    for i, (host, expr, k) in enumerate(inst):
        args, specs = [], []
        for j, (kind, v) in enumerate(k.params):
            pt = f"::msl::rt::param_t<eyas_F{i}, {j}>"
            if kind == "buffer":
                args.append(f"::msl::rt::buffer_arg<{pt}>({v})")
                specs.append(f"{{::msl::rt::PKind::buffer, {v}, ::msl::rt::param_size<{pt}>(), "
                             f"::msl::rt::param_align<{pt}>()}}")
            elif kind == "threadgroup":
                args.append(f"::msl::rt::tg_arg<{pt}>({v})")
                specs.append(f"{{::msl::rt::PKind::threadgroup, {v}, 0, 16}}")
            else:
                args.append(f"::msl::rt::builtin<{pt}>(::msl::rt::Bi::{v})")
                specs.append(f"{{::msl::rt::PKind::builtin, int(::msl::rt::Bi::{v}), 0, 1}}")
        specs = specs or ["{::msl::rt::PKind::builtin, 0, 0, 1}"]
        stubs += [
            f"using eyas_F{i} = decltype(&{expr});",
            f"void eyas_stub_{i}() {{",
            f"  {expr}({', '.join(args)});",
            "}",
            f"const ::msl::rt::ParamSpec eyas_params_{i}[] = {{{', '.join(specs)}}};",
            f'const ::msl::rt::KernelEntry eyas_entry_{i} = {{"{host}", &eyas_stub_{i}, eyas_params_{i}, '
            f'{len(k.params)}, "{name}"}};',
            f"const ::msl::rt::Registrar eyas_reg_{i}{{&eyas_entry_{i}}};",
        ]
    stubs.append("}  // namespace")
    abspath = str(Path(path).resolve())
    text = f'#include <metal_stdlib>\n#line 1 "{abspath}"\n' + body + "\n" + "\n".join(stubs) + "\n"
    return text, inst


def host_names(src: str) -> list[str]:
    """Every kernel name a .metal file provides (instantiations and plain kernels)."""
    return [h for h, _, _ in lower(src, "x.metal")[1]]


if __name__ == "__main__":
    text, _ = lower(Path(sys.argv[1]).read_text(), sys.argv[1])
    Path(sys.argv[2]).write_text(text)
