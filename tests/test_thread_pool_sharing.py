"""One device's thread pool used from several Python threads at once (the server's sequence
threads, forks of one model): callers take turns job by job, so every result has the bits it has
when computed alone, and nothing hangs."""

import threading

import numpy as np

from eyas import _core
from tests import quant_ref as qr


def test_concurrent_ops_on_one_pool_give_the_bits_they_give_alone():
    rng = np.random.default_rng(0)
    threads = _core.get_num_threads()
    _core.set_num_threads(2)  # a real pool: one thread runs jobs inline without it
    try:
        cases = []
        for i in range(4):
            w = qr.random_weights(rng, "Q4_1", 96, 576)
            x = rng.standard_normal((1 + 3 * i, 576), dtype=np.float32)
            cases.append((x, w, _core.ops.matmul(x, w, "Q4_1", (96, 576))))
        failures = []

        def run(x, w, want):
            for _ in range(40):
                got = _core.ops.matmul(x, w, "Q4_1", (96, 576))
                if not np.array_equal(got, want):
                    failures.append("bits differ")
                    return

        workers = [threading.Thread(target=run, args=c) for c in cases]
        for t in workers:
            t.start()
        for t in workers:
            t.join(120)
        assert not any(t.is_alive() for t in workers), "a caller hung"
        assert not failures
    finally:
        _core.set_num_threads(threads)
