"""The one sampler (C++, `_core.speculative.sample` over `target_probs`): greedy ties, seeded
determinism, top-k / top-p / temperature against an exact numpy computation of the filtered
distribution, a chi-square test of the draws; plain sampled decoding draws with it."""

from __future__ import annotations

import numpy as np
import pytest

from eyas import _core
from eyas.generation import plain_steps
from eyas.sampling import SamplingParams

speculative = _core.speculative


def filtered_distribution(x, temperature, top_k=0, top_p=1.0):
    """float64[V]: the engine's softmax(x / T) (the float32 softmax kernel, whose bits every SIMD path
    shares) as float64 and renormalised, over the top_k tokens, renormalised, then the smallest prefix by
    probability desc (ties: lower id first) whose mass reaches top_p, renormalised."""
    p = _core.ops.softmax(np.asarray(x, np.float32)[None, :], float(np.float32(temperature)))[0].astype(np.float64)
    p /= p.sum()
    order = np.lexsort((np.arange(p.size), -p))
    keep = order[:top_k] if 0 < top_k < p.size else order
    if top_p < 1.0:
        cut = int(np.searchsorted(np.cumsum(p[keep] / p[keep].sum()), np.float64(np.float32(top_p)))) + 1
        keep = keep[:cut]
    out = np.zeros_like(p)
    out[keep] = p[keep] / p[keep].sum()
    return out


def draw(x, rng, **kw):
    return speculative.sample(np.asarray(x, np.float32), rng=rng, **kw)


def test_greedy_takes_lowest_id_on_ties():
    assert draw([0.0, 3.0, 1.0, 3.0], speculative.Rng(0)) == 1
    assert SamplingParams().sample(np.array([0.0, 3.0, 1.0, 3.0], np.float32), speculative.Rng(0)) == 1


def test_same_seed_same_tokens():
    logits = np.random.default_rng(0).standard_normal(50).astype(np.float32)
    params = SamplingParams(temperature=1.0, seed=7)
    a, b = params.make_rng(), params.make_rng()
    assert [params.sample(logits, a) for _ in range(100)] == [params.sample(logits, b) for _ in range(100)]
    c = SamplingParams(temperature=1.0, seed=8).make_rng()
    assert [params.sample(logits, a) for _ in range(100)] != [params.sample(logits, c) for _ in range(100)]


def test_top_k_one_and_tiny_top_p_are_greedy():
    rng = np.random.default_rng(1)
    for _ in range(20):
        logits = rng.standard_normal(30).astype(np.float32)
        assert draw(logits, speculative.Rng(0), temperature=2.0, top_k=1) == int(np.argmax(logits))
        assert draw(logits, speculative.Rng(0), temperature=2.0, top_p=1e-9) == int(np.argmax(logits))


def test_small_distributions_by_hand():
    logits = np.log(np.array([0.1, 0.4, 0.2, 0.3], np.float32))
    probs = lambda **kw: speculative.target_probs(logits, **kw)  # noqa: E731
    np.testing.assert_allclose(probs(temperature=1.0), [0.1, 0.4, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(probs(temperature=1.0, top_k=2), [0, 4 / 7, 0, 3 / 7], rtol=1e-6)
    np.testing.assert_allclose(probs(temperature=1.0, top_p=0.75), [0, 4 / 9, 2 / 9, 3 / 9], rtol=1e-6)  # 0.7 < 0.75
    np.testing.assert_allclose(probs(temperature=0.5), np.array([1, 16, 4, 9]) / 30, rtol=1e-6)
    # top_p is measured over the top_k renormalised (llama.cpp's and vLLM's order): of
    # [.3, .25, .2] (mass .75) the first two hold .55 / .75 = 0.73 >= 0.7, so two tokens stay.
    five = np.log(np.array([0.3, 0.25, 0.2, 0.15, 0.1], np.float32))
    np.testing.assert_allclose(speculative.target_probs(five, 1.0, 3, 0.7), [0.3 / 0.55, 0.25 / 0.55, 0, 0, 0],
                               rtol=1e-6)
    ties = np.array([1, 5, 0, 5, 5, 2, 5], np.float32)  # four tied best: top-k keeps the lowest ids
    np.testing.assert_array_equal(speculative.target_probs(ties, 1.0, 2) > 0, [0, 1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(speculative.target_probs(ties, 1.0, 0, 0.5) > 0, [0, 1, 0, 1, 1, 0, 0])


def rows():
    """Rows that reach every selection path: small and 49,152-token vocabularies, flat to peaked,
    many ties at the top, ties across the top-k boundary, -inf entries."""
    rng = np.random.default_rng(3)
    for V in (5000, 49152):
        for scale in (0.5, 3.0, 12.0):
            x = (rng.standard_normal(V) * scale).astype(np.float32)
            yield x
            x = x.copy()
            x[rng.integers(0, V, 200)] = x.max()  # ties at the top
            x[rng.integers(0, V, 100)] = -np.inf
            yield x
    x = np.repeat(np.float32([4.0, 3.0, 2.0, 1.0]), 30)  # ties straddling every top_k below
    yield rng.permutation(x)


def test_empty_logits_are_a_clear_error():
    for call in (lambda x: speculative.target_probs(x, 1.0), lambda x: draw(x, speculative.Rng(0), temperature=1.0)):
        with pytest.raises(ValueError, match="logits must not be empty"):
            call(np.zeros(0, np.float32))


def test_nan_reads_as_minus_inf_and_degenerate_rows_give_the_argmax():
    # target_probs (also accept's distribution) takes rows sample() refuses: a NaN entry is -inf, a row
    # with no finite maximum (all NaN, all -inf, or an inf) puts all its mass on the argmax.
    x = (np.random.default_rng(5).standard_normal(300) * 3).astype(np.float32)
    with_nan, as_ninf = x.copy(), x.copy()
    with_nan[[3, 77, 250]] = np.nan
    as_ninf[[3, 77, 250]] = -np.inf
    for kw in (dict(), dict(top_p=0.9), dict(top_k=20)):
        np.testing.assert_array_equal(speculative.target_probs(with_nan, 0.8, **kw),
                                      speculative.target_probs(as_ninf, 0.8, **kw))
    one_hot = lambda i, n: np.eye(n)[i]  # noqa: E731
    np.testing.assert_array_equal(speculative.target_probs(np.full(6, np.nan, np.float32), 1.0), one_hot(0, 6))
    np.testing.assert_array_equal(speculative.target_probs(np.full(6, -np.inf, np.float32), 1.0), one_hot(0, 6))
    inf_row = x[:6].copy()
    inf_row[4] = np.inf
    np.testing.assert_array_equal(speculative.target_probs(inf_row, 1.0), one_hot(4, 6))


def test_softmax_in_float_is_close_to_float64():
    # The distribution starts from the float32 softmax kernel: within a few float ulps of the exact one.
    for x in rows():
        for t in (0.7, 1.0, 1.3):
            z = x.astype(np.float64) / np.float64(np.float32(t))
            exact = np.exp(z - z.max())
            exact /= exact.sum()
            got = speculative.target_probs(x, t)
            big = exact > 1e-30  # the kernel's exp flushes below exp(-87.3) to 0
            np.testing.assert_allclose(got[big], exact[big], rtol=2e-6, atol=1e-12)


@pytest.mark.parametrize("temperature,top_k,top_p", [
    (1.0, 0, 1.0), (0.7, 0, 0.9), (0.7, 0, 0.5), (1.0, 0, 0.999), (1.3, 40, 1.0), (0.7, 40, 0.8), (0.7, 45, 0.95),
    (2.0, 1, 1.0), (0.7, 100, 1.0), (1.0, 4000, 0.97)])
def test_distribution_equals_the_exact_reference(temperature, top_k, top_p):
    for x in rows():
        want = filtered_distribution(x, temperature, top_k, top_p)
        got = speculative.target_probs(x, temperature, top_k, top_p)
        assert np.array_equal(got > 0, want > 0), "a different set of tokens is kept"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_a_draw_is_the_inverse_cdf_of_target_probs():
    """sample() draws from target_probs with one uniform of the rng, scanning ids in order: the
    same rule and stream of numbers accept() uses."""
    x = (np.random.default_rng(4).standard_normal(3000) * 4).astype(np.float32)
    for kw in (dict(temperature=0.8), dict(temperature=0.8, top_k=30), dict(temperature=1.2, top_p=0.9)):
        p = np.cumsum(speculative.target_probs(x, **kw))
        a, b = speculative.Rng(11), speculative.Rng(11)
        for _ in range(200):
            assert draw(x, a, **kw) == int(np.searchsorted(p, b.uniform(), side="right"))


@pytest.mark.parametrize("kw", [dict(temperature=0.7), dict(temperature=1.0), dict(temperature=0.7, top_p=0.9),
                                dict(temperature=1.0, top_p=0.5), dict(temperature=0.7, top_k=100, top_p=0.95)])
def test_draws_over_whole_vocabularies_are_the_inverse_cdf_of_target_probs(kw):
    """sample() never builds target_probs' row (an unfiltered draw skips chunks of ids by approximate sums,
    a nucleus is ranked from the ids above its bound, found 16 at a time): its draws over the 5K and
    49K-token rows of every selection path, ties and -inf included, are still the inverse CDF of that row."""
    for k, x in enumerate(rows()):
        p = np.cumsum(speculative.target_probs(x, **kw))
        a, b = speculative.Rng(k), speculative.Rng(k)
        for _ in range(40):
            assert draw(x, a, **kw) == int(np.searchsorted(p, b.uniform(), side="right"))


@pytest.mark.parametrize("kw", [dict(temperature=0.7), dict(temperature=1.0), dict(temperature=2.0),
                                dict(temperature=1.0, top_p=0.9)])
def test_draws_at_the_edges_of_the_cumulative_distribution(kw):
    """A whole row's draw skips chunks of ids by approximate sums and hands over to the exact running sum
    where the uniform lies near an edge: at the exact cumulative sums themselves, one ulp and 1e-12 either
    side of them, and away from them, the token is still the inverse CDF of target_probs' row."""
    gen = np.random.default_rng(7)
    for x in rows():
        p = speculative.target_probs(x, **kw)
        cum = np.cumsum(p)
        live = np.flatnonzero(p)
        us = [0.0, np.nextafter(1.0, 0.0)] + list(gen.random(40))
        for k in gen.choice(live, size=min(40, live.size), replace=False):
            c = cum[k]
            us += [c, np.nextafter(c, 0.0), np.nextafter(c, 1.0), c - 1e-12, c + 1e-12]
        for u in us:
            if not 0.0 <= u < 1.0:
                continue
            i = int(np.searchsorted(cum, u, side="right"))
            want = int(live[-1]) if i >= p.size else i  # past the top by rounding: the last live id
            assert speculative._sample_at(x, float(u), **kw) == want, (kw, x.size, u)


@pytest.mark.parametrize("at", [0, 255, 256, 300, 49151])
def test_a_nan_is_named_wherever_it_is_in_a_long_row(at):
    x = np.zeros(49152, np.float32)
    x[at] = np.nan
    x[at + 1:] = np.nan  # the first one is named
    for temperature in (0.0, 0.7):
        with pytest.raises(ValueError, match=rf"^\[sample\] logits contain NaN at index {at}$"):
            draw(x, speculative.Rng(0), temperature=temperature)


def test_one_live_token_among_minus_inf_is_drawn_wherever_it_is():
    for at in (0, 63, 64, 49151):
        x = np.full(49152, -np.inf, np.float32)
        x[at] = -3.0
        assert draw(x, speculative.Rng(1), temperature=0.7, top_p=0.9) == at
        assert draw(x, speculative.Rng(1), temperature=1.3) == at


def chi2(counts, probs):
    live = probs > 0
    expected = probs[live] * counts.sum()
    return float(((counts[live] - expected) ** 2 / expected).sum()), int(live.sum()) - 1


@pytest.mark.parametrize("kw", [dict(temperature=1.0), dict(temperature=0.8, top_k=8, top_p=0.9),
                                dict(temperature=1.5, top_p=0.7)])
def test_draws_follow_the_filtered_distribution(kw):
    x = (np.random.default_rng(5).standard_normal(12) * 1.5).astype(np.float32)
    probs = filtered_distribution(x, **kw)
    rng, n = speculative.Rng(99), 20000
    counts = np.bincount([draw(x, rng, **kw) for _ in range(n)], minlength=x.size).astype(np.float64)
    assert counts[probs == 0].sum() == 0, "drew a token outside the top-k / top-p set"
    stat, df = chi2(counts, probs)
    limit = df + 6 * np.sqrt(2 * df)  # ~1e-6 false-failure rate
    assert stat < limit, f"chi2 {stat:.1f} >= {limit:.1f} (df {df})"
    # The statistic has the power to reject a neighbouring distribution (another temperature).
    other = filtered_distribution(x, kw["temperature"] * 1.3, kw.get("top_k", 0), kw.get("top_p", 1.0))
    if np.array_equal(other > 0, probs > 0):
        assert chi2(counts, other)[0] > 3 * limit


def test_plain_sampled_decoding_draws_with_the_cpp_sampler():
    """plain_steps draws every token with SamplingParams.sample from one rng seeded once: a manual
    forward + `_core.speculative.sample` loop gives the same tokens."""
    from tests.test_speculative_greedy import AUX, make_target, take

    spec, core = make_target()
    target = _core.Transformer(spec, core, max_context=64, aux_layers=AUX)
    params = SamplingParams(temperature=1.5, top_k=20, top_p=0.9, seed=21)
    got = take(plain_steps(target, [4, 5, 6], params), 12)
    target.reset()
    rng = speculative.Rng(21)
    out = target.forward(np.array([4, 5, 6], np.int32), logits="last")
    target.commit(np.arange(3, dtype=np.int32))
    want = []
    for _ in range(12):
        want.append(speculative.sample(out["logits"][-1], temperature=1.5, top_k=20, top_p=0.9, rng=rng))
        out = target.forward(np.array([want[-1]], np.int32), logits="last")
        target.commit(np.zeros(1, np.int32))
    assert got == want
    assert take(plain_steps(target, [4, 5, 6], params), 12) == got  # seeded: repeatable


@pytest.mark.parametrize("kw", [dict(temperature=-1), dict(temperature=float("nan")), dict(top_p=0), dict(top_p=1.5),
                                dict(top_k=-1), dict(top_k=1.5), dict(seed=-3), dict(temperature=True)])
def test_bad_params(kw):
    with pytest.raises(ValueError, match=r"^\[sampling\]"):
        SamplingParams(**kw)


@pytest.mark.parametrize("logits, message", [
    (np.array([1.0, np.nan], np.float32), "NaN"),
    (np.array([], np.float32), "empty"),
    (np.full(8, -np.inf, np.float32), "all -inf"),
    (np.zeros(4, np.float64), "logits"),
    (np.zeros((2, 4), np.float32), "logits"),
])
def test_bad_logits(logits, message):
    for temperature in (0.0, 1.0):
        with pytest.raises(ValueError, match=rf"^\[sample\].*{message}"):
            speculative.sample(logits, temperature=temperature, rng=speculative.Rng(0))


def test_speculative_first_token_is_plain_decodings_draw():
    """One rng per generation, seeded once: the prefill's token is the same draw in both modes."""
    from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
    from tests.parity.cases_speculative import build, random_checkpoint
    from tests.test_speculative_greedy import AUX, make_target

    spec, core = make_target()
    drafter = build(spec, core, *random_checkpoint(1, spec, draft_vocab=48))
    target = _core.Transformer(spec, core, max_context=64, aux_layers=AUX)
    for seed in range(8):
        params = SamplingParams(temperature=3.0, seed=seed)
        plain = next(plain_steps(target, [4, 5, 6], params))
        gen = SpeculativeGenerator(target, Eagle3Proposer(drafter), TreePolicy.chain(2)).steps([4, 5, 6], params)
        assert next(gen) == plain
        gen.close()


@pytest.mark.parametrize("kw", [dict(temperature=0.7), dict(temperature=1.5, top_p=0.9), dict(temperature=1.0, top_k=5),
                                dict(temperature=0.8, top_k=40, top_p=0.5)])
def test_sample_with_top_draws_the_same_token_and_gives_the_rows_top_probability(kw):
    """The speculative policy's acceptance bound: the same draw as `sample` (same rng use) and the
    largest probability of the filtered row it came from."""
    rng = np.random.default_rng(3)
    for v in (7, 49152):
        x = (rng.standard_normal(v) * 3).astype(np.float32)
        a, b = speculative.Rng(11), speculative.Rng(11)
        for _ in range(3):
            token, top = speculative.sample_with_top(x, rng=a, **kw)
            assert token == speculative.sample(x, rng=b, **kw)
            assert top == pytest.approx(filtered_distribution(x, **kw).max(), rel=1e-6)
    x = np.array([0.5, 3.0, 3.0, -1.0], np.float32)
    assert speculative.sample_with_top(x, rng=speculative.Rng(0)) == (1, 1.0)  # greedy: the argmax, bound 1


def test_sample_with_top_refuses_what_sample_refuses():
    rng = speculative.Rng(0)
    with pytest.raises(ValueError, match=r"\[sample_with_top\].*NaN"):
        speculative.sample_with_top(np.array([0.0, np.nan], np.float32), temperature=1.0, rng=rng)
    with pytest.raises(ValueError, match=r"\[sample_with_top\].*top_p"):
        speculative.sample_with_top(np.zeros(4, np.float32), temperature=1.0, top_p=0.0, rng=rng)
    with pytest.raises(ValueError, match=r"\[sample_with_top\].*empty"):
        speculative.sample_with_top(np.zeros(0, np.float32), temperature=1.0, rng=rng)
