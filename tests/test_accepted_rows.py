"""accepted_rows: the accepted nodes' feature rows, a view for a chain's prefix (eyas.speculative.rounds)."""

import numpy as np

from eyas.speculative.rounds import accepted_rows


def test_a_prefix_path_gives_a_view_of_the_same_rows():
    rows = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    for m in range(1, 6):
        path = np.arange(m, dtype=np.int32)
        got = accepted_rows(rows, path)
        np.testing.assert_array_equal(got, rows[path])
        assert np.shares_memory(got, rows) and got.flags.c_contiguous  # no copy, and ingest takes it as it is


def test_a_branching_path_gives_its_own_rows():
    rows = np.arange(7 * 2, dtype=np.float32).reshape(7, 2)
    for path in ([0, 2], [0, 3, 6], [0, 1, 4]):  # node ids rise along a path, but skip siblings
        p = np.array(path, np.int32)
        np.testing.assert_array_equal(accepted_rows(rows, p), rows[p])
