"""bench/compare_llamacpp.py's roofline: the bytes a decode step reads and the same-round bandwidth
probe it is divided by (the tool's llama.cpp side needs a llama-bench binary and is not run here)."""

import numpy as np
import pytest

import eyas
from eyas import _core
from tests.fixtures.bench_script import load_bench_script


def load_script():
    return load_bench_script("compare_llamacpp")


def test_step_bytes_are_the_weights_and_the_average_context():
    cl = load_script()
    m = eyas.load(drafter="none", max_context=64).transformer
    m.forward(np.array([1], np.int32), logits="none")
    m.commit(np.zeros(1, np.int32))
    per_token = m.state_bytes
    assert per_token > 0
    assert cl.step_bytes(m, 32) == m.weight_bytes + per_token * 17
    assert m.length == 0, "the probe leaves the model empty"


def test_read_bandwidth_is_a_positive_rate_for_any_thread_count():
    cl = load_script()
    buf = np.arange(1 << 20, dtype=np.uint64)
    for threads in (1, 2, 3):
        assert 0 < cl.read_bandwidth(buf, _core.Device("cpu", threads)) < 10_000


def test_the_engine_probe_refuses_bad_arguments_clearly():
    buf = np.arange(1 << 12, dtype=np.uint64)
    with pytest.raises(ValueError, match="streams"):
        _core.read_bandwidth(buf, 0)
    with pytest.raises(ValueError, match="reps"):
        _core.read_bandwidth(buf, 4, 0)
    with pytest.raises(TypeError):
        _core.read_bandwidth(np.arange(16, dtype=np.float32))


def test_verify_curve_times_every_size_and_leaves_the_model_empty():
    cl = load_script()
    m = eyas.load(drafter="none", max_context=256).transformer
    step, verify = cl.eyas_verify_curve(m, [1, 4, 9], 32, 1, np.random.default_rng(0))
    assert step > 0 and sorted(verify) == [1, 4, 9] and all(t > 0 for t in verify.values())
    assert m.length == 0


def test_verify_bound_is_the_larger_of_a_step_and_the_prefill_rows():
    cl = load_script()
    assert cl.verify_bound(0.01, 0.001, 4) == pytest.approx(0.0115)  # a step dominates small trees
    assert cl.verify_bound(0.01, 0.001, 32) == pytest.approx(1.15 * 0.032)  # the rows' compute large ones
