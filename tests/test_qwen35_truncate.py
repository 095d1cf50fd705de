"""Truncating a hybrid (Gated DeltaNet) target: the recurrent state keeps no per-token history, only the
current length, 0 and, with `prefill_checkpoints` on (the serving engine's slots), a checkpoint at the end
of the last prefill (a causal forward of several rows).
`truncatable` names the longest allowed length, truncating there continues with plain decoding's bits,
anything else is a clear error; prompt caching (the serving engine's chat turns, logprobs) goes through
`generation.reusable` and keeps the bits, plain and speculative (MTP drafter)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import eyas.api as api  # noqa: E402
from eyas import _core, generation  # noqa: E402
from eyas.loaders import load_model  # noqa: E402
from eyas.sampling import SamplingParams  # noqa: E402
from eyas.server.engine import Request  # noqa: E402
from tests.fixtures import tiny_qwen35  # noqa: E402
from tests.test_server_engine import batched_runs, collect, engine_for, fresh  # noqa: E402, F401  (engine_for: a fixture)

i32 = np.int32


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("q35trunc") / "m"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_qwen35.make_mtp(tiny_qwen35.make_hf("dense", path), path)
    return path


def _logits_after(t, ids):
    t.reset()
    return np.asarray(t.prefill(np.asarray(ids, i32), logits="all")["logits"])


def test_truncatable_lengths_and_the_bits_after_truncating(folder):
    m = load_model(folder)
    t = _core.Transformer(m.spec, m.weights, max_context=64)
    assert not t.prefill_checkpoints
    t.prefill_checkpoints = True
    ids = np.random.default_rng(0).integers(0, tiny_qwen35.VOCAB, 14).astype(i32)
    t.prefill(ids[:8], logits="none")
    for tok in ids[8:12]:
        t.decode(int(tok), logits="none")
    assert t.length == 12
    assert [t.truncatable(n) for n in (99, 12, 11, 8, 7, 0, -3)] == [12, 12, 8, 8, 0, 0, 0]
    with pytest.raises(ValueError, match=r"^\[truncate\] a model with recurrent \(gdn\) layers keeps no per-token "
                                         r"history: truncate to 0, to the length 12 or to the end of the last "
                                         r"prefill 8, not 10"):
        t.truncate(10)
    assert t.length == 12  # a refused truncate leaves the model as it was
    t.truncate(8)
    got = np.asarray(t.forward(np.asarray([5, 6, 7], i32), logits="all")["logits"])
    want = _logits_after(_core.Transformer(m.spec, m.weights, max_context=64), list(ids[:8]) + [5, 6, 7])[-3:]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    t.truncate(0)
    assert t.truncatable(5) == 0 and t.length == 0  # a reset forgets the checkpoint


def test_without_prefill_checkpoints_only_the_length_and_0_are_kept(folder):
    m = load_model(folder)
    t = _core.Transformer(m.spec, m.weights, max_context=64)
    t.prefill(np.arange(8, dtype=i32), logits="none")
    t.decode(3, logits="none")
    assert [t.truncatable(n) for n in (9, 8, 5)] == [9, 0, 0]
    with pytest.raises(ValueError, match=r"truncate to 0 or to the length 9, not 8"):
        t.truncate(8)
    t.prefill_checkpoints = True  # from the next prefill on
    assert t.truncatable(8) == 0
    t.prefill(np.arange(4, dtype=i32), logits="none")
    t.decode(3, logits="none")
    assert [t.truncatable(n) for n in (14, 13, 12)] == [14, 13, 0]
    t.prefill_checkpoints = False  # the checkpoint goes with it
    assert t.truncatable(13) == 0


def test_attention_only_models_truncate_anywhere():
    from tests.test_speculative_greedy import AUX, make_target

    spec, core = make_target()
    t = _core.Transformer(spec, core, max_context=32, aux_layers=AUX)
    t.prefill(np.arange(10, dtype=i32), logits="none")
    assert [t.truncatable(n) for n in (3, 10, 12)] == [3, 10, 10]


# (drafter family, logprobs, the second turn reuses the first prompt). Logprobs rerun the sequence from a
# kept length and leave the checkpoint at its end, past the speculative proposer's pairs: no reuse then.
CHAT_CASES = [("none", None, True), ("none", 2, True), ("mtp", None, True), ("mtp", 2, False)]


@pytest.mark.parametrize("family, logprobs, reuses", CHAT_CASES)
def test_chat_turns_reuse_the_prefill_checkpoint_and_keep_the_bits(folder, family, logprobs, reuses, engine_for):
    model = api.load(folder, drafter_family=family, max_context=128)
    engine = engine_for(model, max_concurrency=1, max_queue=4)
    sampling = SamplingParams()
    first_ids = model.encode_prompt("Once upon a time")
    first = collect(engine, [Request(first_ids, sampling, 10, logprobs=logprobs)])[0]
    turn2 = first_ids + first["tokens"] + model.encode_prompt(" and then")
    second = collect(engine, [Request(turn2, sampling, 10, logprobs=logprobs)])[0]
    assert first["cached_tokens"] == 0
    # The state is kept at the end of the first prompt's prefill or of the logprobs forward.
    assert (second["cached_tokens"] >= len(first_ids)) == reuses
    assert second["tokens"] == fresh(api.load(folder, drafter_family=family, max_context=128), turn2, sampling, 10)


def test_reusable_is_what_the_target_can_keep(folder):
    model = api.load(folder, drafter_family="none", max_context=64)
    t = model.transformer
    t.prefill_checkpoints = True
    ids = model.encode_prompt("Once upon a time")
    steps = generation.stream(t, ids, SamplingParams())
    gen = [next(steps) for _ in range(4)]
    steps.close()
    assert t.length == len(ids) + 3 and gen
    assert generation.reusable(t, None, len(ids) + 2) == len(ids)
    assert generation.reusable(t, None, len(ids) - 1) == 0
    assert generation.reusable(t, None, 0) == 0


PROMPTS = ["Once upon a time", "The quick brown fox", "a", "1 2 3 4", "zzz"]


@pytest.mark.parametrize("family", ["none", "mtp"])
@pytest.mark.parametrize("sampling", [SamplingParams(), SamplingParams(temperature=0.8, top_p=0.9, seed=7)],
                         ids=["greedy", "seeded"])
def test_hybrid_requests_batch_together_and_keep_their_bits(folder, family, sampling, engine_for):
    """Continuous batching on a hybrid target: requests' Gated DeltaNet rows share one forward (each from
    its own recurrent state) and every request gets the tokens it gets alone."""
    model = api.load(folder, drafter_family=family, max_context=128)
    want = [fresh(model, model.encode_prompt(p), sampling, 10) for p in PROMPTS]
    # Sharing forwards is asked of one run in up to five (batched_runs; a CI run once served every
    # forward alone); every run's outputs must be right.
    seen = batched_runs(engine_for, model, lambda: [Request(model.encode_prompt(p), sampling, 10) for p in PROMPTS],
                        want, shared=lambda b: b.widest >= 2 and b.batched_forwards > b.batches,
                        max_concurrency=3, max_queue=16)
    assert all(s[3] == 0 for s in seen), seen  # the batches ran as batches, not one by one after a refusal
    assert seen[-1][0] >= 2 and seen[-1][2] > seen[-1][1], seen
