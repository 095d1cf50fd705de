"""Random-weight GGUFs at the shapes of real models, for speed comparisons (decode speed does not
depend on weight values). The tokenizer is the bundled default model's (SmolLM2); for Qwen3,
Qwen3.5 and Llama-3.1 shapes, whose tokenizers are not on disk, its token list is padded with unused
tokens (or cut) to the real vocabulary size, so only the embedding and output shapes are real.
Qwen3.5 shapes are hybrids (`qwen35`): three Gated DeltaNet layers to one gated attention layer.

    python bench/make_shape_gguf.py --shape smollm2-1.7b --type Q4_K_M [--out ~/.cache/eyas-bench]
    python bench/make_shape_gguf.py --list

Quantized tensors are written as random valid blocks of the type llama.cpp's llama-quantize
would choose for each tensor (the Q4_K_M / Q5_K_M mixtures and the Q6_K output included, see
`tensor_type`); --llama-quantize PATH instead writes F16 and runs that tool (not a dependency of eyas).
Files are written once and reused; nothing is written inside the repository.
"""

from __future__ import annotations

import argparse
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFReader, GGUFValueType, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES


@dataclass(frozen=True)
class Shape:
    arch: str  # GGUF architecture
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool  # output projection shares token_embd
    rope_base: float
    gdn: "Gdn | None" = None  # Qwen3.5 hybrids: the Gated DeltaNet layers' sizes


@dataclass(frozen=True)
class Gdn:
    k_heads: int
    v_heads: int
    head_dim: int  # key and value heads alike (llama.cpp assumes it)
    conv: int = 4
    interval: int = 4  # layer i is full attention iff (i + 1) % interval == 0
    rope_fraction: float = 0.25  # partial rotary of the attention layers

    def recurrent(self, i: int) -> bool:
        return (i + 1) % self.interval != 0

    def channels(self) -> int:  # conv channels: q | k | v
        return (2 * self.k_heads + self.v_heads) * self.head_dim


SHAPES = {
    "smollm2-135m": Shape("llama", 30, 576, 1536, 9, 3, 64, 49152, True, 100000.0),
    "smollm2-360m": Shape("llama", 32, 960, 2560, 15, 5, 64, 49152, True, 100000.0),
    "smollm2-1.7b": Shape("llama", 24, 2048, 8192, 32, 32, 64, 49152, True, 130000.0),
    "qwen3-0.6b": Shape("qwen3", 28, 1024, 3072, 16, 8, 128, 151936, True, 1000000.0),
    "qwen3-4b": Shape("qwen3", 36, 2560, 9728, 32, 8, 128, 151936, True, 1000000.0),
    "llama-3.1-8b": Shape("llama", 32, 4096, 14336, 32, 8, 128, 128256, False, 500000.0),
    # Qwen3.5-0.8B's published text config (24 layers, 1024 wide, 8/2 heads of 256, FFN 3584, GDN 16/16 heads
    # of 128). The 2B: llama.cpp names a 24-layer, 2048-wide qwen35 "2B"; its other sizes here are assumed
    # (the 0.8B's heads, FFN 3x hidden), so treat it as a shape of that size, not the checkpoint.
    "qwen3.5-0.8b": Shape("qwen35", 24, 1024, 3584, 8, 2, 256, 248320, True, 10000000.0, Gdn(16, 16, 128)),
    "qwen3.5-2b": Shape("qwen35", 24, 2048, 6144, 8, 2, 256, 248320, True, 10000000.0, Gdn(16, 16, 128)),
}

# File types: the type most tensors get; llama.cpp's ftype ids (general.file_type).
FILE_TYPES = {"F16": (QT.F16, 1), "BF16": (QT.BF16, 32), "Q8_0": (QT.Q8_0, 7), "Q4_0": (QT.Q4_0, 2), "Q4_1": (QT.Q4_1, 3), "Q4_K_M": (QT.Q4_K, 15),
              "Q5_K_M": (QT.Q5_K, 17), "Q6_K": (QT.Q6_K, 18)}
# A 256-block type on a row that is not a multiple of 256 falls back to a 32-block type (llama.cpp).
K_FALLBACK = {QT.Q4_K: QT.Q5_0, QT.Q5_K: QT.Q5_1, QT.Q6_K: QT.Q8_0}


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the layers that get more bits in the _M mixtures."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(ftype: str, name: str, ncols: int, layer: int, n_layers: int, tied: bool) -> QT:
    """The type llama-quantize gives tensor `name` (rows of `ncols` elements) in a file of `ftype`."""
    base = FILE_TYPES[ftype][0]
    if base in (QT.F16, QT.BF16):
        return base
    t = base
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        t = QT.Q8_0 if ncols % GGML_QUANT_SIZES[base][0] else (QT.Q6_K if base != QT.Q8_0 else base)
    elif ftype in ("Q4_K_M", "Q5_K_M") and name.endswith(("attn_v.weight", "ffn_down.weight")):
        # attn_v counts attention layers, ffn_down FFN layers: the same index in a dense model
        if use_more_bits(layer, n_layers):
            t = QT.Q6_K
    if t in K_FALLBACK and ncols % 256:
        t = K_FALLBACK[t]
    if ncols % GGML_QUANT_SIZES[t][0]:
        t = QT.F16
    return t


def stored_type(ftype: str, name: str, shape: tuple[int, ...], layer: int, s: Shape) -> QT:
    """Norms, biases and the Gated DeltaNet conv kernel stay F32 (as llama.cpp keeps them); the rest tensor_type."""
    if len(shape) == 1 or "ssm_conv1d" in name:
        return QT.F32
    return tensor_type(ftype, name, shape[-1], layer, s.layers, s.tied)


def tensors(s: Shape) -> list[tuple[str, tuple[int, ...], int]]:
    """(name, numpy shape [rows, cols], layer) of every tensor, in llama.cpp's order."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    out = [("token_embd.weight", (s.vocab, s.hidden), 0)]
    g = s.gdn
    for i in range(s.layers):
        b = f"blk.{i}."
        if g and g.recurrent(i):  # Gated DeltaNet: qkv, output gate, beta/alpha, conv, decay, per-head norm
            vw = g.v_heads * g.head_dim
            out += [(b + "attn_norm.weight", (s.hidden,), i), (b + "attn_qkv.weight", (g.channels(), s.hidden), i),
                    (b + "attn_gate.weight", (vw, s.hidden), i), (b + "ssm_beta.weight", (g.v_heads, s.hidden), i),
                    (b + "ssm_alpha.weight", (g.v_heads, s.hidden), i), (b + "ssm_conv1d.weight", (g.channels(), g.conv), i),
                    (b + "ssm_dt.bias", (g.v_heads,), i), (b + "ssm_a", (g.v_heads,), i),
                    (b + "ssm_norm.weight", (g.head_dim,), i), (b + "ssm_out.weight", (s.hidden, vw), i)]
        else:  # gated attention (qwen35: q_proj also yields the gate), or a plain one
            wq = 2 * q if g else q
            out += [(b + "attn_norm.weight", (s.hidden,), i), (b + "attn_q.weight", (wq, s.hidden), i),
                    (b + "attn_k.weight", (kv, s.hidden), i), (b + "attn_v.weight", (kv, s.hidden), i),
                    (b + "attn_output.weight", (s.hidden, q), i)]
            if s.arch in ("qwen3", "qwen35"):
                out += [(b + "attn_q_norm.weight", (s.head_dim,), i), (b + "attn_k_norm.weight", (s.head_dim,), i)]
        norm = "post_attention_norm.weight" if g else "ffn_norm.weight"
        out += [(b + norm, (s.hidden,), i), (b + "ffn_gate.weight", (s.ffn, s.hidden), i),
                (b + "ffn_up.weight", (s.ffn, s.hidden), i), (b + "ffn_down.weight", (s.hidden, s.ffn), i)]
    out.append(("output_norm.weight", (s.hidden,), 0))
    if not s.tied:
        out.append(("output.weight", (s.vocab, s.hidden), 0))
    return out


# Byte offsets of the f16 scale fields in one block (every other byte pattern is a valid block).
SCALE_FIELDS = {QT.Q8_0: (0,), QT.Q4_0: (0,), QT.Q4_1: (0, 2), QT.Q5_0: (0,), QT.Q5_1: (0, 2), QT.Q4_K: (0, 2),
                QT.Q5_K: (0, 2), QT.Q6_K: (208,)}
# Their value: weights of magnitude ~0.1 at most (K-quants multiply by 6-bit or int8 sub-block scales).
BLOCK_SCALE = {QT.Q8_0: 1e-3, QT.Q4_0: 1e-2, QT.Q4_1: 1e-2, QT.Q5_0: 5e-3, QT.Q5_1: 5e-3, QT.Q4_K: 1e-4, QT.Q5_K: 5e-5,
               QT.Q6_K: 1e-4}


def random_data(rng: np.random.Generator, t: QT, shape: tuple[int, ...], name: str = "") -> np.ndarray:
    if name.endswith("ssm_a"):  # -exp(A_log): a decay, so the recurrent state stays bounded
        return np.full(shape, -1.0, np.float32)
    if name.endswith("ssm_dt.bias"):
        return np.zeros(shape, np.float32)
    if len(shape) == 1:
        return np.ones(shape, np.float32)  # norm weights
    if t == QT.F32:  # the conv kernel
        return rng.uniform(-0.5, 0.5, size=shape).astype(np.float32)
    rows, cols = shape
    if t == QT.F16:  # |w| in [2^-8, 2^-6): random mantissa and sign, exponent 7 or 8
        bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
        return ((bits & 0x83FF) | np.where(bits & 0x0400, 0x1C00, 0x2000).astype(np.uint16)).view(np.float16)
    if t == QT.BF16:  # the same magnitudes: exponent field 119 or 120, random mantissa and sign
        bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
        bits = (bits & 0x807F) | np.where(bits & 0x0080, 119 << 7, 120 << 7).astype(np.uint16)
        return bits.view(np.uint8).reshape(rows, cols * 2)
    elems, nbytes = GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, size=(rows * cols // elems, nbytes), dtype=np.uint8)
    scale = np.frombuffer(np.float16(BLOCK_SCALE[t]).tobytes(), np.uint8)
    for off in SCALE_FIELDS[t]:  # fixed small scales keep activations finite over many layers
        blocks[:, off:off + 2] = scale
    return blocks.reshape(rows, cols // elems * nbytes)


def copy_tokenizer(w: GGUFWriter, src: Path, vocab: int) -> None:
    r = GGUFReader(str(src))
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        val = f.contents()
        if key == "tokenizer.ggml.tokens":
            val = (val + [f"<|unused_{i}|>" for i in range(len(val), vocab)])[:vocab]
        elif key == "tokenizer.ggml.token_type":
            val = (val + [5] * (vocab - len(val)))[:vocab]  # 5: unused, as llama.cpp's converter types padding
        if f.types[0] == GGUFValueType.ARRAY:
            w.add_key_value(key, val, GGUFValueType.ARRAY, sub_type=f.types[-1])
        else:
            w.add_key_value(key, val, f.types[0])


def write_gguf(path: Path, s: Shape, ftype: str, tokenizer: Path, seed: int = 0) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    a = s.arch
    w = GGUFWriter(str(path), a)
    w.add_name(f"random {path.stem}")
    w.add_uint32(f"{a}.block_count", s.layers)
    w.add_uint32(f"{a}.context_length", 8192)
    w.add_uint32(f"{a}.embedding_length", s.hidden)
    w.add_uint32(f"{a}.feed_forward_length", s.ffn)
    w.add_uint32(f"{a}.attention.head_count", s.heads)
    w.add_uint32(f"{a}.attention.head_count_kv", s.kv_heads)
    w.add_uint32(f"{a}.attention.key_length", s.head_dim)
    w.add_uint32(f"{a}.attention.value_length", s.head_dim)
    w.add_float32(f"{a}.rope.freq_base", s.rope_base)
    g = s.gdn
    w.add_uint32(f"{a}.rope.dimension_count", int(s.head_dim * g.rope_fraction) if g else s.head_dim)
    if g:  # reference/qwen35_hybrid.md §1: the keys llama.cpp's converter writes
        w.add_array(f"{a}.rope.dimension_sections", [11, 11, 10, 0])
        w.add_uint32(f"{a}.ssm.conv_kernel", g.conv)
        w.add_uint32(f"{a}.ssm.state_size", g.head_dim)
        w.add_uint32(f"{a}.ssm.group_count", g.k_heads)
        w.add_uint32(f"{a}.ssm.time_step_rank", g.v_heads)
        w.add_uint32(f"{a}.ssm.inner_size", g.v_heads * g.head_dim)
        w.add_uint32(f"{a}.full_attention_interval", g.interval)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-5 if a == "llama" else 1e-6)
    w.add_uint32(f"{a}.vocab_size", s.vocab)
    w.add_uint32("general.file_type", FILE_TYPES[ftype][1])
    w.add_uint32("general.quantization_version", 2)
    copy_tokenizer(w, tokenizer, s.vocab)
    plan, counts = [], {}
    for name, shape, layer in tensors(s):
        t = stored_type(ftype, name, shape, layer, s)
        plan.append((name, shape, t))
        counts[t.name] = counts.get(t.name, 0) + 1
        if t == QT.F32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), 4 * int(np.prod(shape)))
        else:
            elems, nbytes = GGML_QUANT_SIZES[t]
            row = shape[1] // elems * nbytes
            if t == QT.F16:
                w.add_tensor_info(name, shape, np.dtype(np.float16), shape[0] * row)
            else:  # raw blocks: the shape in bytes, as gguf-py expects for uint8 data
                w.add_tensor_info(name, (shape[0], row), np.dtype(np.uint8), shape[0] * row, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape, t in plan:  # one tensor in memory at a time
        w.write_tensor_data(random_data(rng, t, shape, name))
    w.close()
    return counts


def default_tokenizer() -> Path:
    from eyas.models.default import default_model_path  # eyas on PYTHONPATH (build/<name>/pkg) or installed
    return default_model_path()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES), action="append")
    ap.add_argument("--type", choices=list(FILE_TYPES), action="append")
    ap.add_argument("--out", type=Path, default=Path.home() / ".cache" / "eyas-bench")
    ap.add_argument("--llama-quantize", type=Path, help="write F16 and quantize with this llama-quantize binary")
    ap.add_argument("--tokenizer", type=Path, help="GGUF whose tokenizer to copy (default: eyas's default model)")
    ap.add_argument("--force", action="store_true", help="rewrite existing files")
    ap.add_argument("--list", action="store_true", help="print the per-tensor types of each file and exit")
    args = ap.parse_args()
    if not args.shape or not args.type:
        ap.error("give at least one --shape and one --type")
    tok = None
    for shape in args.shape:
        s = SHAPES[shape]
        for ftype in args.type:
            if args.list:
                for name, sh, layer in tensors(s):
                    if len(sh) == 2:
                        print(shape, ftype, name, "x".join(map(str, sh)), stored_type(ftype, name, sh, layer, s).name)
                continue
            args.out.mkdir(parents=True, exist_ok=True)
            tok = tok or args.tokenizer or default_tokenizer()
            path = args.out / f"{shape}-random-{ftype}.gguf"
            if path.exists() and not args.force:
                print(path, "(exists)")
                continue
            tmp = path.with_suffix(".tmp")
            if args.llama_quantize and ftype != "F16":
                f16 = args.out / f"{shape}-random-F16.gguf"
                if not f16.exists():
                    write_gguf(f16, s, "F16", tok)
                subprocess.run([str(args.llama_quantize), str(f16), str(tmp), ftype], check=True)
                print(path, "(llama-quantize)")
            else:
                counts = write_gguf(tmp, s, ftype, tok)
                print(path, counts)
            tmp.rename(path)


if __name__ == "__main__":
    main()
