"""Sampling: greedy ties, seeded determinism, top-k / top-p filtering, the sampled distribution."""

from __future__ import annotations

import numpy as np
import pytest

from eyas.sampling import Sampler, SamplingParams


def test_greedy_takes_lowest_id_on_ties():
    assert Sampler().sample(np.array([0.0, 3.0, 1.0, 3.0])) == 1


def test_same_seed_same_tokens():
    logits = np.random.default_rng(0).standard_normal(50)
    a = Sampler(SamplingParams(temperature=1.0, seed=7))
    b = Sampler(SamplingParams(temperature=1.0, seed=7))
    assert [a.sample(logits) for _ in range(100)] == [b.sample(logits) for _ in range(100)]
    c = Sampler(SamplingParams(temperature=1.0, seed=8))
    assert [a.sample(logits) for _ in range(100)] != [c.sample(logits) for _ in range(100)]


def test_top_k_one_and_tiny_top_p_are_greedy():
    rng = np.random.default_rng(1)
    for _ in range(20):
        logits = rng.standard_normal(30)
        assert Sampler(SamplingParams(temperature=2.0, top_k=1, seed=0)).sample(logits) == int(np.argmax(logits))
        assert Sampler(SamplingParams(temperature=2.0, top_p=1e-9, seed=0)).sample(logits) == int(np.argmax(logits))


def test_distribution_filters():
    logits = np.log(np.array([0.1, 0.4, 0.2, 0.3]))
    ids, p = Sampler(SamplingParams(temperature=1.0)).distribution(logits)
    assert list(ids) == [1, 3, 2, 0]
    np.testing.assert_allclose(p, [0.4, 0.3, 0.2, 0.1])
    ids, p = Sampler(SamplingParams(temperature=1.0, top_k=2)).distribution(logits)
    assert list(ids) == [1, 3]
    np.testing.assert_allclose(p, [4 / 7, 3 / 7])
    ids, p = Sampler(SamplingParams(temperature=1.0, top_p=0.75)).distribution(logits)
    assert list(ids) == [1, 3, 2]  # 0.4 + 0.3 < 0.75 <= 0.9
    np.testing.assert_allclose(p, [4 / 9, 3 / 9, 2 / 9])
    ids, p = Sampler(SamplingParams(temperature=0.5)).distribution(logits)
    np.testing.assert_allclose(p, np.array([16, 9, 4, 1]) / 30)


def test_samples_follow_the_distribution():
    logits = np.log(np.array([0.5, 0.25, 0.125, 0.125]))
    s = Sampler(SamplingParams(temperature=1.0, seed=123))
    n = 20000
    counts = np.bincount([s.sample(logits) for _ in range(n)], minlength=4) / n
    # 5 standard deviations of a binomial frequency at n=20000 is < 0.018.
    np.testing.assert_allclose(counts, [0.5, 0.25, 0.125, 0.125], atol=0.018)


@pytest.mark.parametrize("kw", [dict(temperature=-1), dict(temperature=float("nan")), dict(top_p=0), dict(top_p=1.5),
                                dict(top_k=-1), dict(top_k=1.5), dict(seed=-3)])
def test_bad_params(kw):
    with pytest.raises(ValueError, match=r"^\[sampling\]"):
        SamplingParams(**kw)


def test_bad_logits():
    with pytest.raises(ValueError, match=r"\[sampling\]"):
        Sampler(SamplingParams(temperature=1.0)).sample(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"\[sampling\]"):
        Sampler().sample(np.array([]))


def _full_sort_distribution(x, temperature, top_k, top_p):
    """The definition, by a full sort of the vocabulary (what distribution() must equal)."""
    order = np.lexsort((np.arange(x.size), -x))
    if top_k:
        order = order[:top_k]
    z = x[order] / temperature
    probs = np.exp(z - z[0])
    probs /= probs.sum()
    if top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(probs), top_p)) + 1
        order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
    return order, probs


@pytest.mark.parametrize("top_k,top_p", [(0, 0.9), (0, 0.5), (0, 0.999), (40, 1.0), (40, 0.8), (0, 1.0)])
def test_distribution_equals_the_full_sort_definition(top_k, top_p):
    rng = np.random.default_rng(top_k + int(top_p * 1000))
    for i in range(6):
        x = rng.standard_normal(5000) * (1 + 3 * i)  # flat to peaked
        x[rng.integers(0, 5000, 200)] = x.max()  # many ties at the top
        want_ids, want_p = _full_sort_distribution(x, 0.7, top_k, top_p)
        ids, p = Sampler(SamplingParams(temperature=0.7, top_k=top_k, top_p=top_p)).distribution(x)
        assert np.array_equal(ids, want_ids)
        np.testing.assert_allclose(p, want_p, rtol=1e-9, atol=1e-15)


def test_all_minus_inf_logits_are_an_error():
    with pytest.raises(ValueError, match=r"^\[sampling\]"):
        Sampler(SamplingParams(temperature=1.0, seed=0)).sample(np.full(8, -np.inf))
