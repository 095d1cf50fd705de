"""The rope kernel reuses the last position's cos/sin table (a decode step rotates q and k of every
layer at one position); a different position or inverse-frequency table must never hit it."""

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
