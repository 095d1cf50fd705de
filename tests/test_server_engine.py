"""The serving engine without HTTP: output under concurrency is the output alone (greedy and seeded,
plain and speculative), the prompt cache keeps bits, the queue is bounded, cancel frees a slot;
and the per-model lock that makes `Model.generate` safe from several threads."""

from __future__ import annotations

import os
import queue
import threading

import pytest

import eyas.api as api
from eyas import generation
from eyas.sampling import SamplingParams
from eyas.server.engine import Engine, QueueFull, Request
from tests.test_cli import one_thread_models, tiny  # noqa: F401  (fixtures: a tiny GGUF, one-thread models)
from tests.test_speculative_proposer import Random, register_family

PROMPTS = ["Hello world", "The quick brown fox", "a", "Once upon a time there was", "1 2 3 4", "zzz"]
SAMPLINGS = [SamplingParams(), SamplingParams(temperature=0.8, top_p=0.9, top_k=20, seed=7)]


class Caching(Random):
    """Random drafts (useless, never wrong) that support prompt caching: keeps its ingested pairs."""

    def __init__(self, seed=0, vocab=64):
        super().__init__(seed, vocab)
        self.truncations = []

    @property
    def length(self):
        return len(self.ingested)

    def truncate(self, n):
        self.truncations.append(n)
        del self.ingested[n:]


@pytest.fixture
def caching_family(monkeypatch):
    register_family(monkeypatch, "caching", Caching)


@pytest.fixture
def engine_for():
    """engine_for(model, **options): an Engine that is shut down after the test."""
    made = []

    def make(model, **options) -> Engine:
        made.append(Engine(model, **options))
        return made[-1]

    yield make
    for engine in made:
        engine.shutdown()


# A hang shows as a request that never answers; under a sanitizer (.ci/tsan sets this) the core runs
# ~10-30x slower, so the wait that tells a hang from slowness grows with it.
SLOWDOWN = float(os.environ.get("EYAS_TEST_SLOWDOWN", "1"))


def collect(engine: Engine, requests: list[Request], *, start: bool = False) -> list[dict]:
    """Submit all at once (start=True: then start an engine made with start=False, so every request
    is queued before the first round); each request's final record, in submission order."""
    done: list[queue.Queue] = [queue.Queue() for _ in requests]
    for q, r in zip(done, requests):
        engine.submit(r, lambda kind, payload, q=q: kind != "text" and q.put((kind, payload)))
    if start:
        engine.start()
    out = []
    for q in done:
        kind, payload = q.get(timeout=60 * SLOWDOWN)
        assert kind == "done", payload
        out.append(payload)
    return out


def batched_runs(engine_for, model, requests, want, *, shared, tries: int = 5, **options) -> list:
    """Serves requests() on fresh engines until one run's batcher shows `shared(batcher)`, at most `tries`
    runs: a tiny model's steps take microseconds, so on a loaded 2-core machine one request's thread
    can finish before another's is scheduled, and sharing forwards is asked of one run in `tries`.
    Every run's tokens must equal `want` (they never depend on the batching). Returns each run's
    (widest, batches, batched_forwards, failed_batches)."""
    seen = []
    for _ in range(tries):
        engine = engine_for(model, start=False, **options)
        engine.batcher.wait_s = 0.05  # a longer patience lets a late sequence join
        got = collect(engine, requests(), start=True)
        assert [g["tokens"] for g in got] == want
        b = engine.batcher
        seen.append((b.widest, b.batches, b.batched_forwards, b.failed_batches))
        engine.shutdown()
        if shared(b):
            break
    return seen


def fresh(model, ids: list[int], sampling: SamplingParams, max_tokens: int) -> list[int]:
    """The tokens after `ids` from a fresh generation (caches reset) on `model`."""
    steps = generation.stream(model.transformer, ids, sampling, proposer=model.proposer)
    return generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids),
                                 max_tokens=max_tokens).consume().tokens


def alone(model, prompt: str, sampling: SamplingParams, max_tokens: int) -> list[int]:
    """The request served by itself through the Python API."""
    return model.generate(prompt, max_tokens=max_tokens, temperature=sampling.temperature, top_p=sampling.top_p,
                          top_k=sampling.top_k, seed=sampling.seed).tokens


@pytest.mark.parametrize("sampling", SAMPLINGS, ids=["greedy", "seeded"])
def test_output_under_load_equals_output_alone(tiny, sampling, engine_for):
    model = api.load(tiny, drafter="none")
    want = [alone(model, p, sampling, 12) for p in PROMPTS]
    # The outputs of every run must equal the requests served alone (batched_runs).
    seen = batched_runs(engine_for, model, lambda: [Request(model.encode_prompt(p), sampling, 12) for p in PROMPTS],
                        want, shared=lambda b: b.widest == 3 and b.batched_forwards > b.batches,
                        max_concurrency=3, max_queue=16)
    # continuous batching: the requests' steps shared forwards (3 sequences in one at least once)
    assert seen[-1][0] == 3 and seen[-1][2] > seen[-1][1], seen


def test_speculative_output_under_load_equals_plain_output(tiny, caching_family, engine_for):
    plain = api.load(tiny, drafter="none")
    want = [alone(plain, p, SAMPLINGS[0], 12) for p in PROMPTS]
    model = api.load(tiny, drafter="x", drafter_family="caching")
    engine = engine_for(model, max_concurrency=3, max_queue=16, tree="3,2,5", start=False)
    got = collect(engine, [Request(model.encode_prompt(p), SAMPLINGS[0], 12) for p in PROMPTS], start=True)
    assert [g["tokens"] for g in got] == want
    assert engine.batcher.widest >= 2  # tree verifies of several requests in one forward
    assert all(g["speculative"]["num_drafts"] >= 1 for g in got)
    # every slot drafted with its own proposer: forks share no sequence state
    assert len({id(s.model.proposer) for s in engine.slots}) == 3


@pytest.mark.parametrize("sampling", SAMPLINGS, ids=["greedy", "seeded"])
def test_prompt_cache_reuses_the_kv_and_keeps_the_bits(tiny, sampling, engine_for):
    model = api.load(tiny, drafter="none")
    engine = engine_for(model, max_concurrency=1, max_queue=4)
    first_ids = model.encode_prompt("Once upon a time")
    first = collect(engine, [Request(first_ids, sampling, 10)])[0]
    turn2 = first_ids + first["tokens"] + model.encode_prompt(" and then")
    second = collect(engine, [Request(turn2, sampling, 10)])[0]
    assert first["cached_tokens"] == 0 and second["cached_tokens"] >= len(first_ids)
    assert second["tokens"] == fresh(api.load(tiny, drafter="none"), turn2, sampling, 10)


def test_prompt_cache_keeps_the_proposers_pairs(tiny, caching_family, engine_for):
    model = api.load(tiny, drafter="x", drafter_family="caching")
    engine = engine_for(model, max_concurrency=1, max_queue=4, tree="chain:2")
    ids = model.encode_prompt("Once upon a time there was")
    first = collect(engine, [Request(ids, SAMPLINGS[0], 10)])[0]
    turn2 = ids + first["tokens"][:5] + [3, 4]
    second = collect(engine, [Request(turn2, SAMPLINGS[0], 10)])[0]
    keep = model.proposer.truncations[-1]  # truncated to the pairs still valid, not reset
    assert 0 < keep < second["cached_tokens"] <= len(ids) + 5
    assert second["tokens"] == fresh(api.load(tiny, drafter="none"), turn2, SAMPLINGS[0], 10)


def test_cached_must_be_a_held_prefix(tiny):
    model = api.load(tiny, drafter="none")
    with pytest.raises(ValueError, match=r"\[generate\] cached"):
        generation.stream(model.transformer, [1, 2, 3], SamplingParams(), cached=3)
    with pytest.raises(ValueError, match=r"\[generate\] cached"):
        generation.stream(model.transformer, [1, 2, 3], SamplingParams(), cached=2)  # holds nothing yet


def test_queue_is_bounded(tiny, engine_for):
    model = api.load(tiny, drafter="none")
    engine = engine_for(model, max_concurrency=1, max_queue=1, start=False)
    req = Request(model.encode_prompt("Hello"), SamplingParams(), 4)
    engine.submit(req, lambda *a: None)  # takes the free slot once the worker runs
    engine.submit(req, lambda *a: None)  # waits
    with pytest.raises(QueueFull):
        engine.submit(req, lambda *a: None)
    engine.start()


def test_cancel_frees_the_slot(tiny, engine_for):
    model = api.load(tiny, drafter="none")
    engine = engine_for(model, max_concurrency=1, max_queue=4)
    events: queue.Queue = queue.Queue()
    long = Request(model.encode_prompt("Hello"), SamplingParams(), 4000, ignore_eos=True)  # seconds of work
    job = engine.submit(long, lambda kind, payload: events.put(kind))
    assert events.get(timeout=30) == "text"
    job.cancel()
    while events.get(timeout=30) != "error":
        pass
    after = collect(engine, [Request(model.encode_prompt("Hello"), SamplingParams(), 5)])[0]
    assert after["tokens"] == alone(api.load(tiny, drafter="none"), "Hello", SamplingParams(), 5)
    assert engine.metrics.cancelled == 1 and engine.active == 0


def test_a_failing_request_does_not_stop_the_engine(tiny, engine_for):
    model = api.load(tiny, drafter="none")
    engine = engine_for(model, max_concurrency=2, max_queue=4)
    events: queue.Queue = queue.Queue()
    engine.submit(Request([], SamplingParams(), 5), lambda kind, payload: events.put((kind, payload)))
    kind, payload = events.get(timeout=30)
    assert kind == "error" and "[generate] the prompt is empty" in str(payload)
    assert collect(engine, [Request(model.encode_prompt("Hi"), SamplingParams(), 3)])[0]["completion_tokens"] >= 1


def test_a_failing_receiver_cancels_only_its_own_request(tiny, engine_for):
    model = api.load(tiny, drafter="none")
    engine = engine_for(model, max_concurrency=2, max_queue=4)

    def broken(kind, payload):
        raise RuntimeError("receiver bug")

    engine.submit(Request(model.encode_prompt("Hello"), SamplingParams(), 50), broken)
    assert collect(engine, [Request(model.encode_prompt("Hi"), SamplingParams(), 3)])[0]["completion_tokens"] >= 1


def test_the_engine_owns_its_model_while_it_runs(tiny):
    """Another thread's generate on the engine's model waits for shutdown (it would clobber the
    prompt cache), then runs normally."""
    model = api.load(tiny, drafter="none")
    want = alone(model, "Hello", SAMPLINGS[0], 6)
    engine = Engine(model, max_concurrency=1, max_queue=4)
    collect(engine, [Request(model.encode_prompt("Hello"), SAMPLINGS[0], 6)])
    got = []
    t = threading.Thread(target=lambda: got.append(alone(model, "Hello", SAMPLINGS[0], 6)))
    t.start()
    t.join(0.5)
    assert t.is_alive() and got == []
    engine.shutdown()
    t.join(30)
    assert got == [want]


def test_model_generate_from_several_threads(tiny):
    """One model, four threads: each waits its turn and gets the output it gets alone."""
    model = api.load(tiny, drafter="none")
    want = {p: alone(model, p, SAMPLINGS[1], 20) for p in PROMPTS[:4]}
    got, errors = {}, []

    def work(p):
        try:
            got[p] = alone(model, p, SAMPLINGS[1], 20)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,)) for p in PROMPTS[:4]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and got == want


def test_an_open_stream_blocks_a_second_generation_on_the_same_thread(tiny):
    model = api.load(tiny, drafter="none")
    stream = model.generate("Hello", max_tokens=8, stream=True)
    next(iter(stream))
    with pytest.raises(api.ModelBusy, match=r"\[generate\] this model is already generating"):
        model.generate("Other", max_tokens=2)
    stream.close()
    assert model.generate("Other", max_tokens=2).tokens  # closing the stream released the model


def test_recommended_sampling(tmp_path, tiny):
    from eyas.loaders import sampling as rec

    assert rec.from_gguf({"general.sampling.temp": 0.6, "general.sampling.top_p": 0.95,
                          "general.sampling.top_k": 20}) == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
    assert rec.from_gguf({"general.sampling.top_p": 7.0}) == {}  # out of range: ignored
    (tmp_path / "generation_config.json").write_text('{"do_sample": true, "temperature": 0.3, "top_p": 0.8}')
    assert rec.from_hf_folder(tmp_path) == {"temperature": 0.3, "top_p": 0.8}
    (tmp_path / "generation_config.json").write_text('{"temperature": 0.3}')  # inert without do_sample
    assert rec.from_hf_folder(tmp_path) == {}
    (tmp_path / "generation_config.json").write_text('{"do_sample": false}')
    assert rec.from_hf_folder(tmp_path) == {"temperature": 0.0}
    model = api.load(tiny, drafter="none")
    assert model.loaded.sampling == {} and model.recommended_sampling() == api.CHAT_SAMPLING
    model.loaded.sampling = {"temperature": 0.2}
    assert model.recommended_sampling() == {"temperature": 0.2}


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [SamplingParams(), SamplingParams(temperature=0.8, top_p=0.95, seed=5)],
                         ids=["greedy", "sampled"])
def test_default_model_with_its_drafter_under_load_and_from_the_cache(engine_for, sampling):
    """The real EAGLE-3 drafter: greedy and seeded sampling under load equal alone, and a second turn
    served from the prompt cache (target KV and drafter pairs kept) equals the same turn served fresh.
    Under load the draft gate makes rounds plain; the drafter reads their pairs when the request ends,
    so the second turn keeps most of the first (a greedy one kept none before it did)."""
    from tests.fixtures.default_model import load_or_skip

    load_or_skip()
    model = api.load(threads=1, max_context=512)
    if model.proposer is None:
        pytest.skip("no bundled drafter fits the default model")
    prompts = [model.encode_prompt(p, chat=True) for p in ("Name a color.", "Say hi.", "Count to three.")]
    engine = engine_for(model, max_concurrency=3, max_queue=8)
    under_load = collect(engine, [Request(ids, sampling, 16) for ids in prompts])
    turn2 = prompts[0] + under_load[0]["tokens"] + model.encode_prompt("And another?")
    cached = collect(engine, [Request(turn2, sampling, 16)])[0]
    new = api.load(threads=1, max_context=512)
    for ids, got in zip(prompts, under_load):
        assert got["tokens"] == fresh(new, ids, sampling, 16)
        assert got["speculative"]["num_drafts"] >= 1
    assert cached["cached_tokens"] > len(prompts[0]) + len(under_load[0]["tokens"]) // 2
    assert cached["tokens"] == fresh(new, turn2, sampling, 16)


def test_draft_gate_makes_rounds_plain_and_keeps_the_tokens(tiny, caching_family):
    """The server's draft gate (drafts only while a request runs alone): closed, a request drafts
    nothing and still gives its tokens, greedy the plain ones, sampled the same draws as ungated."""
    plain = api.load(tiny, drafter="none")
    ids = plain.encode_prompt(PROMPTS[3])

    def run(sampling, gate):  # a fresh model each time: the random drafts restart from their seed
        model = api.load(tiny, drafter="x", drafter_family="caching")
        steps = generation.stream(model.transformer, ids, sampling, proposer=model.proposer, policy="3,2,5",
                                  draft_gate=gate)
        return generation.Generation(steps, model.tokenizer, num_prompt_tokens=len(ids), max_tokens=12).consume()

    greedy, seeded = SAMPLINGS
    got = run(greedy, lambda: False)
    assert got.tokens == fresh(plain, ids, greedy, 12) and got.metrics["num_draft_tokens"] == 0
    got, ungated = run(seeded, lambda: False), run(seeded, None)
    assert got.tokens == ungated.tokens == fresh(plain, ids, seeded, 12)
    assert got.metrics["num_draft_tokens"] == 0 < ungated.metrics["num_draft_tokens"]
