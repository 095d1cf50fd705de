"""The generator's small helpers in eyas.speculative.rounds: accepted_rows (the accepted nodes' feature rows, a
view for a chain's prefix) and tree_depth (the deepest drafted level, read off a chain's last node)."""

import numpy as np

from eyas.speculative.lookup import chain_tree
from eyas.speculative.rounds import DraftTree, accepted_rows, tree_depth


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


def test_a_verify_features_view_survives_later_forwards():
    """The generator holds a chain's accepted rows as a view until the drafter's next ingest, across plain
    steps and copy rounds: each forward must return its captured features in storage of its own."""
    from eyas import _core
    from tests.parity.cases_speculative import tiny_target

    spec, core, _ = tiny_target()
    t = _core.Transformer(spec, core, max_context=64, aux_layers=[1, 2, 3])
    t.prefill(np.arange(5, dtype=np.int32))
    n = 3
    out = t.forward(np.array([7, 8, 9], np.int32), mask=np.tril(np.ones((n, n), np.uint8)),
                    depths=np.arange(n, dtype=np.int32), logits="argmax_all", capture_aux=True)
    kept = accepted_rows(out["aux"], np.arange(2, dtype=np.int32))
    before = kept.copy()
    t.commit(np.arange(2, dtype=np.int32))
    for token in (11, 12, 13):  # plain steps write new features
        t.decode(token, logits="argmax", capture_aux=True)
    np.testing.assert_array_equal(kept, before)


def test_tree_depth_of_chains_and_of_trees_whose_last_node_is_not_the_deepest():
    for n in range(0, 6):
        assert tree_depth(chain_tree(5, list(range(10, 10 + n)))) == n
    # two merged chains of 2 (root, a1, a2, b1, b2) and a tree ending on a shallow node
    for depths, want in (([0, 1, 2, 1, 2], 2), ([0, 1, 2, 1], 2), ([0, 1, 1, 2, 3, 1], 3)):
        d = np.array(depths, np.int32)
        tree = DraftTree(np.arange(len(d), dtype=np.int32), np.zeros(len(d), np.int32), d,
                         np.eye(len(d), dtype=np.uint8))
        assert tree_depth(tree) == want
