"""The one generation seam: `eyas.generation.stream` serves the API, the CLI and `eyas bench`, plain
and speculative alike; its checks and its metrics."""

import json

import pytest

import eyas.api as api
from eyas import generation
from eyas.cli import main
from eyas.commands.bench import bench
from eyas.sampling import SamplingParams
from eyas.speculative import TreePolicy
from tests.test_cli import one_thread_models, tiny  # noqa: F401  (fixtures: a tiny GGUF, one-thread models)
from tests.test_speculative_bench import FakeModel
from tests.test_speculative_proposer import Random, register_family


@pytest.fixture
def calls(monkeypatch):
    """Every stream() call's (proposer, policy), while the real stream does the work."""
    seen, real = [], generation.stream

    def spy(target, prompt_ids, sampling, *, proposer=None, policy=None, **kw):
        seen.append((proposer, policy))
        return real(target, prompt_ids, sampling, proposer=proposer, policy=policy, **kw)

    monkeypatch.setattr(generation, "stream", spy)
    return seen


@pytest.fixture
def random_family(monkeypatch):
    register_family(monkeypatch, "random")


def test_api_goes_through_stream(tiny, calls, random_family):
    plain = api.load(tiny, drafter_family="none").generate("Hello", max_tokens=6)
    assert calls == [(None, None)]
    m = api.load(tiny, drafter="x", drafter_family="random")
    r = m.generate("Hello", max_tokens=6, tree="chain:2")
    assert calls[1] == (m.proposer, "chain:2")
    assert r.tokens == plain.tokens and r.metrics["num_drafts"] >= 1


def test_cli_goes_through_stream(tiny, calls, capsys):
    assert main(["generate", "Hello", "--model", tiny, "--max-tokens", "3", "--json", "--drafter", "none"]) == 0
    assert calls == [(None, None)]
    assert len(json.loads(capsys.readouterr().out)["tokens"]) >= 1


def test_bench_goes_through_stream(calls):
    m = FakeModel()
    policy = TreePolicy(2, 2, 4)
    r = bench(m, [{"prompt": "hello", "chat": False}], policy=policy, max_tokens=6, repeats=2)
    assert r["identical"] is True
    plain, speculative = (None, None), (m.proposer, policy)
    # a warm-up pair, then one pair per repeat in alternating order
    assert calls == [plain, speculative, plain, speculative, speculative, plain]


def test_stream_plain_and_speculative(tiny, random_family):
    model = api.load(tiny, drafter="x", drafter_family="random")
    ids = model.encode_prompt("Hello world")
    plain = generation.stream(model.transformer, ids, SamplingParams())
    first = [t for _, t in zip(range(8), (tok for step in plain for tok in step))]
    plain.close()
    assert plain.metrics() == {}
    speculative = generation.stream(model.transformer, ids, SamplingParams(), proposer=model.proposer,
                                    policy="3,2,5")
    got = []
    for step in speculative:
        got += step
        if len(got) >= 8:
            break
    speculative.close()
    assert got[:8] == first
    assert speculative.metrics()["num_drafts"] >= 1


def test_stream_rejects_bad_arguments(tiny):
    model = api.load(tiny, drafter_family="none")
    with pytest.raises(ValueError, match=r"\[generate\] sampling must be a SamplingParams"):
        generation.stream(model.transformer, [1, 2], {"temperature": 0.5})
    with pytest.raises(ValueError, match=r"\[generate\] the prompt is empty"):
        generation.stream(model.transformer, [], SamplingParams())
    with pytest.raises(ValueError, match=r"\[speculative\] tree policy 'bad'"):
        generation.stream(model.transformer, [1], SamplingParams(), proposer=Random(), policy="bad")
