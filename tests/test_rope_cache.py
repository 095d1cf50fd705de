"""The rope kernel keeps cos/sin tables of recent positions per inverse-frequency table (a forward
rotates q and k of every layer at the same positions); a different position or table must never hit
an entry."""

import numpy as np

from eyas import _core
from tests.parity.cases_rope import inv_freq_for, rope_ref


def test_table_reuse_is_keyed_on_position_and_frequencies():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 64), dtype=np.float32)
    neox = _core.ops.RopeStyle.neox
    pos = np.array([77], np.int32)
    freqs = [inv_freq_for(64), inv_freq_for(64, factor=8.0), inv_freq_for(32), inv_freq_for(64, theta=5e5)]
    for f in freqs:
        rot = 2 * len(f)
        want = _core.ops.rope(x, np.array([5], np.int32), f, neox)  # cold: another position first
        want = _core.ops.rope(x, pos, f, neox)
        for g in freqs:  # same position, other tables in between
            _core.ops.rope(x, pos, g, neox)
            got = _core.ops.rope(x, pos, f, neox)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        np.testing.assert_allclose(want, rope_ref(x, pos, f, "neox", rot), rtol=1e-5, atol=1e-5)
        again = _core.ops.rope(x, pos + 1, f, neox)  # next position: recomputed
        np.testing.assert_allclose(again, rope_ref(x, pos + 1, f, "neox", rot), rtol=1e-5, atol=1e-5)


def test_positions_sharing_a_table_slot_and_repeated_positions():
    """Entries are direct-mapped on the position (1024 slots): positions 1024 apart evict each other,
    and a tree's repeated depths reuse one entry; every row still gets its own position's angles."""
    rng = np.random.default_rng(1)
    neox = _core.ops.RopeStyle.neox
    f = inv_freq_for(64)
    pos = np.array([3, 1027, 3, 2051, 1027, 5, 5, 3], np.int32)
    x = rng.standard_normal((len(pos), 2, 64), dtype=np.float32)
    for _ in range(2):  # cold, then warm
        got = _core.ops.rope(x, pos, f, neox)
        np.testing.assert_allclose(got, rope_ref(x, pos, f, "neox", 64), rtol=1e-5, atol=1e-5)
        for i, p in enumerate(pos):  # the same bits as rotating the row alone
            alone = _core.ops.rope(x[i : i + 1], pos[i : i + 1], f, neox)
            assert np.array_equal(alone.view(np.uint32), got[i : i + 1].view(np.uint32))
