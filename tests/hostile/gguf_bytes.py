"""Writes GGUF bytes field by field, so a test can make any part of a header lie.

`GGUFImage` holds what `eyas.loaders.gguf_file.GGUFFile` parses (fields, tensor table, data) with
explicit value types; `to_bytes()` serializes it, taking overrides for the counts and alignment
that a well-formed writer (gguf.GGUFWriter) would never let one get wrong.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from eyas.loaders.gguf_file import ARRAY, STRING, GGUFFile

U8, I8, U16, I16, U32, I32, F32, BOOL, U64, I64, F64 = 0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12
_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q",
        F64: "<d"}
_NUMPY_TYPE = {np.dtype(np.uint8): U8, np.dtype(np.int8): I8, np.dtype(np.uint16): U16, np.dtype(np.int16): I16,
               np.dtype(np.uint32): U32, np.dtype(np.int32): I32, np.dtype(np.float32): F32,
               np.dtype(np.bool_): BOOL, np.dtype(np.uint64): U64, np.dtype(np.int64): I64,
               np.dtype(np.float64): F64}


def string(s: str | bytes) -> bytes:
    raw = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(raw)) + raw


def value(t: int, v) -> bytes:
    """One metadata value of type t (an ARRAY value is (element type, list))."""
    if t == STRING:
        return string(v)
    if t == ARRAY:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack(_FMT.get(t, "<I"), v)  # an unknown type gets 4 bytes: the reader must stop first


def typed(v):
    """(type, value) for a value as GGUFFile returns it."""
    if isinstance(v, bool):
        return BOOL, v
    if isinstance(v, int):
        return (U32, v) if 0 <= v < 2**32 else (I64, v)
    if isinstance(v, float):
        return F32, v
    if isinstance(v, str):
        return STRING, v
    if isinstance(v, np.ndarray):
        return ARRAY, (_NUMPY_TYPE[v.dtype], v.tolist())
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return ARRAY, (STRING, v)
    raise TypeError(f"no GGUF type for {type(v).__name__}")


@dataclasses.dataclass
class Tensor:
    name: str
    dims: list[int]  # fastest-first, as GGML writes them
    type: int
    offset: int


@dataclasses.dataclass
class GGUFImage:
    fields: dict  # key -> (type, value)
    tensors: list[Tensor]
    data: bytes
    version: int = 3

    @classmethod
    def read(cls, path) -> "GGUFImage":
        f = GGUFFile(path)
        fields = {k: typed(v) for k, v in f.fields.items()}
        tensors = [Tensor(t.name, list(t.dims), t.type, t.offset) for t in f.tensors]
        return cls(fields, tensors, bytes(f.data[f.data_offset:]))

    def copy(self) -> "GGUFImage":
        return GGUFImage(dict(self.fields), [dataclasses.replace(t) for t in self.tensors], self.data, self.version)

    def tensor(self, name: str) -> Tensor:
        return next(t for t in self.tensors if t.name == name)

    def header(self, *, n_tensors: int | None = None, n_kv: int | None = None) -> bytes:
        out = [b"GGUF", struct.pack("<I", self.version),
               struct.pack("<QQ", len(self.tensors) if n_tensors is None else n_tensors,
                           len(self.fields) if n_kv is None else n_kv)]
        for key, (t, v) in self.fields.items():
            out += [string(key), struct.pack("<I", t), value(t, v)]
        for t in self.tensors:
            out += [string(t.name), struct.pack("<I", len(t.dims)), *(struct.pack("<Q", d) for d in t.dims),
                    struct.pack("<IQ", t.type, t.offset)]
        return b"".join(out)

    def to_bytes(self, **counts) -> bytes:
        head = self.header(**counts)
        align = self.fields.get("general.alignment", (U32, 32))[1]
        align = align if isinstance(align, int) and align > 0 else 32
        pad = -len(head) % align
        return head + b"\0" * pad + self.data

    def write(self, path, **counts):
        path.write_bytes(self.to_bytes(**counts))
        return path
