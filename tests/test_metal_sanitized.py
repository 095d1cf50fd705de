"""A representative subset of Metal kernels once more under ASan + UBSan (every buffer in its
own exact-size heap block, so any out-of-bounds device access aborts with a report)."""

import zlib

import numpy as np
import pytest

from tests.metal_emu import cases as mc
from tests.metal_emu.fixtures import sanitized_emulator  # noqa: F401 (pytest fixture)
from tests.metal_emu.host import Host

# One or two cases per kernel family, chosen for odd shapes and partial threadgroups.
SUBSET = [
    "rms_norm-5x33", "rope-interleaved-t3-h2-d96-r32-inplace", "add-4x100-row", "silu_mul-2x77-wide",
    "sigmoid_mul-5x31", "scale-3x17", "softmax-5x1000-t1.0-log", "argmax-8x100-ties", "topk-3x100-k10-ties",
    "attention-q9-h6/2-d80-p16-tree", "attention-q4-h4/1-d64-p12-tree-n11", "kv_write-t5-h2-d16-cap8-at0",
    "kv_move_rows-overlap-backward", "matmul-Q4_0-3x17x160", "matmul-Q5_1-19x3x96", "matmul-Q4_K-9x5x768",
    "matmul-Q6_K-3x17x512", "matmul-BF16-2x3x7", "embedding-Q5_K-9x512-T5", "embedding-Q4_1-9x96-T5",
]
CASES = {c.id: c for c in mc.all_cases()}


@pytest.mark.parametrize("case_id", SUBSET)
def test_sanitized(sanitized_emulator, case_id):
    case = CASES[case_id]
    a = case.make_inputs(np.random.default_rng(zlib.crc32(case.id.encode())))
    host = Host(sanitized_emulator, "random", seed=11)
    variants = ["vec", "mat"] if case.op == "matmul" else [None]
    for v in variants:
        mc.check(case, mc.run(host, case, a, v), case.ref(a), f"{case.id} {v or ''} (asan)")


def test_subset_covers_every_family():
    assert {CASES[i].op for i in SUBSET} == set(mc.OPS)
