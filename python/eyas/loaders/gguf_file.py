"""A small GGUF (v2/v3) parser: metadata and tensor table from the header, tensor data memory-mapped.

Same format the `gguf` package reads; parsed here in one pass over bytes because GGUFReader
builds a numpy view per string and takes seconds on a 49k-token vocabulary.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32, 7: np.bool_,
          10: np.uint64, 11: np.int64, 12: np.float64}
STRING, ARRAY = 8, 9
# Arrays of arrays deeper than this are refused: llama.cpp writes none, and a file could nest them
# until Python's recursion limit.
MAX_ARRAY_NESTING = 8


class GGUFError(ValueError):
    pass


class TensorInfo:
    __slots__ = ("name", "dims", "type", "offset")

    def __init__(self, name: str, dims: list[int], type_: int, offset: int):
        self.name, self.dims, self.type, self.offset = name, dims, type_, offset


class GGUFFile:
    """`fields`: key -> value (str, int, float, bool, list[str] or numpy array); `tensors`: TensorInfo
    in file order, dims fastest-first as GGML writes them; `data`: read-only memory map of the file;
    `data_offset`: where tensor data starts."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        with open(self.path, "rb") as fh:
            if fh.seek(0, 2) == 0:
                raise GGUFError("the file is empty")
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.data = np.frombuffer(self._map, dtype=np.uint8)  # keeps the map alive as its base
        self._buf = memoryview(self.data)
        self._pos = 0
        if bytes(self._take(4)) != b"GGUF":
            raise GGUFError("bad magic (not a GGUF file)")
        version = self._scalar(4)
        if version not in (2, 3):
            raise GGUFError(f"GGUF version {version} is not supported (2, 3)")
        n_tensors, n_kv = self._scalar(10), self._scalar(10)
        self.fields: dict = {}
        for _ in range(n_kv):
            key = self._string()
            self.fields[key] = self._value(self._scalar(4))
        self.tensors: list[TensorInfo] = []
        for _ in range(n_tensors):
            name = self._string()
            n_dims = self._scalar(4)
            if n_dims > 4:
                raise GGUFError(f"tensor {name!r} has {n_dims} dimensions")
            dims = [self._scalar(10) for _ in range(n_dims)]
            self.tensors.append(TensorInfo(name, dims, self._scalar(4), self._scalar(10)))
        names = [t.name for t in self.tensors]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise GGUFError(f"tensor {dup!r} is listed more than once")
        align = self.fields.get("general.alignment", 32)
        if not isinstance(align, int) or isinstance(align, bool) or align < 1 or align & (align - 1):
            raise GGUFError(f"general.alignment must be a power of two, got {align!r}")
        self.data_offset = (self._pos + align - 1) // align * align
        self._drop_header_pages()

    def _drop_header_pages(self) -> None:
        """The header is parsed into Python objects and never read again, so its mapped pages (a 248K-token
        vocabulary's strings are ~7 MB) need not stay in this process's resident set; they fault back in
        from the file if read (a hint: the bytes never change)."""
        if hasattr(self._map, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED, 0, self._pos // mmap.PAGESIZE * mmap.PAGESIZE)

    def _take(self, n: int) -> memoryview:
        if n < 0 or self._pos + n > len(self._buf):
            raise GGUFError(f"header runs past the end of the file at byte {self._pos} (truncated?)")
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def _scalar(self, t: int):
        fmt = _SCALARS[t]
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def _string(self) -> str:
        n = self._scalar(10)
        return bytes(self._take(n)).decode("utf-8", errors="replace")

    def _value(self, t: int, depth: int = 0):
        if t in _SCALARS:
            return self._scalar(t)
        if t == STRING:
            return self._string()
        if t == ARRAY:
            et, n = self._scalar(4), self._scalar(10)
            if et in _NUMPY:
                size = np.dtype(_NUMPY[et]).itemsize
                return np.frombuffer(self._take(n * size), dtype=_NUMPY[et]).copy()
            if et == STRING:
                return self._strings(n)
            if et == ARRAY and depth >= MAX_ARRAY_NESTING:
                raise GGUFError(f"arrays nest deeper than {MAX_ARRAY_NESTING} levels at byte {self._pos}")
            return [self._value(et, depth + 1) for _ in range(n)]
        raise GGUFError(f"unknown metadata value type {t} at byte {self._pos}")

    def _strings(self, n: int) -> list[str]:
        buf, pos, end, out = self._buf, self._pos, len(self._buf), []
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(n):
            if pos + 8 > end:
                raise GGUFError("string array runs past the end of the file (truncated?)")
            (k,) = unpack(buf, pos)
            if pos + 8 + k > end:
                raise GGUFError("string array runs past the end of the file (truncated?)")
            out.append(bytes(buf[pos + 8 : pos + 8 + k]).decode("utf-8", errors="replace"))
            pos += 8 + k
        self._pos = pos
        return out

    def tensor_bytes(self, info: TensorInfo, nbytes: int) -> np.ndarray:
        """uint8 view of a tensor's `nbytes` data bytes (read-only, zero-copy)."""
        start = self.data_offset + info.offset
        if start + nbytes > len(self.data):
            raise GGUFError(f"tensor {info.name!r} data runs past the end of the file (truncated?)")
        return self.data[start : start + nbytes]
