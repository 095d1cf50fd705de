"""The one generation path: `stream()` turns prompt ids, sampling parameters and (optionally) a
proposer and tree policy into token lists; `Generation` turns those into text pieces.

`stream` yields one id per step for plain decoding and 1 + accepted drafted ids per speculative
round; the API, the CLI and the benchmarks all call it, so stop handling, detokenization and
metrics live in one place (`Generation`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Iterable, Iterator

import numpy as np

from eyas.sampling import SamplingParams
from eyas.tokenizer import IncrementalDecoder, Tokenizer


def fail(msg: str) -> None:
    raise ValueError(f"[generate] {msg}")


@dataclasses.dataclass
class GenerationResult:
    text: str
    tokens: list[int]  # generated ids, without the prompt; EOS is not included
    finish_reason: str  # "eos" | "length" | "stop"
    metrics: dict


def plain_steps(model, prompt_ids: list[int], sampling: SamplingParams, *,
                prefill_chunk: int = 512, cached: int = 0) -> Iterator[list[int]]:
    """Yields [token] forever: prefill the prompt, then decode one token per step.

    model: the `_core.Transformer` interface (prefill, decode: forward + commit in one call, so a
    recurrent layer updates its state in place); its cache is reset first, or truncated to `cached`
    (the leading prompt ids it already holds), and only the rest is prefilled.
    Greedy sampling asks forward for logits="argmax": the token comes back without the logits
    (the same first-maximum rule as the speculative accept), which saves a copy and a scan.
    Otherwise the C++ sampler draws from the last row with one rng for the whole generation (on a
    `_core.Transformer` inside the step's own call, `Transformer.advance`).
    """
    if cached:
        model.truncate(cached)
    else:
        model.reset()
    greedy = sampling.greedy
    rng = None if greedy else sampling.make_rng()
    mode = "argmax" if greedy else "last"
    ids = np.asarray(prompt_ids[cached:], dtype=np.int32)
    out = None
    for start in range(0, len(ids), prefill_chunk):
        chunk = ids[start : start + prefill_chunk]
        last = start + prefill_chunk >= len(ids)
        out = model.prefill(chunk, logits=mode if last else "none")
    token = out["argmax"] if greedy else sampling.sample(out["logits"][-1], rng)
    from eyas.speculative.rounds import ROOT_PARENTS, advances_in_one_call

    if not greedy and advances_in_one_call(model):
        # The draw in the engine (Transformer.advance on one node: decode, then the same sampler on the same
        # rng), so no logits row is copied out and no Python runs between the step and its draw.
        filters = sampling.filters()
        while True:
            yield [token]
            token = int(model.advance(np.array([token], np.int32), ROOT_PARENTS, rng=rng, **filters)["tokens"][0])
    while True:
        yield [token]
        out = model.decode(token, logits=mode)
        token = out["argmax"] if greedy else sampling.sample(out["logits"][-1], rng)


class TokenStream:
    """Iterator of token-id lists, one per step; `metrics()` holds the speculative counters
    (num_drafts, num_accepted_tokens, ...; empty for plain decoding), complete once it is closed."""

    def __init__(self, steps: Iterator[list[int]], metrics=None):
        self._steps = steps
        self._metrics = metrics

    def __iter__(self):
        return self

    def __next__(self) -> list[int]:
        return next(self._steps)

    def close(self) -> None:
        self._steps.close()

    def metrics(self) -> dict:
        return self._metrics() if self._metrics is not None else {}


def reusable(target, proposer, cached: int) -> int:
    """How many of `cached` leading prompt ids `stream` can keep on `target` (what a prompt cache reuses):
    all unless the target has recurrent layers, which return to some lengths only (Transformer.truncatable);
    speculative generation keeps one id less (its features start there)."""
    if cached <= 0:
        return 0
    if proposer is None:
        return target.truncatable(cached)
    from eyas.speculative.generator import kept_positions

    keep = kept_positions(target, proposer, cached)
    return keep + 1 if keep > 0 else 0


def stream(target, prompt_ids, sampling: SamplingParams, *, proposer=None, policy=None,
           prefill_chunk: int = 512, cached: int = 0, draft_gate=None) -> TokenStream:
    """Generate after `prompt_ids` until the caller stops iterating.

    target: the `_core.Transformer` interface (its cache is reset first; built with the proposer's
    aux_layers when there is one). proposer: an `eyas.speculative.Proposer`, or None for plain
    decoding. policy: the draft-tree policy, a `TreePolicy` or its string form ("4,5,16",
    "chain:3", "auto:3"); None = the proposer's recommendation, else "auto". Plain decoding ignores it.
    cached: prompt caching: how many leading prompt ids the target (and proposer) already hold from
    the previous generation on them; those are kept instead of prefilled again (same bits: the kernels
    are batch-invariant). The caller vouches that they are the ids it committed; 0 = start fresh.
    `reusable` gives the most a target with recurrent layers can keep.
    draft_gate: speculative decoding only: a callable asked before each round; False makes the round a
    plain step (the server: drafts do not pay while other requests share the forward). The tokens never
    depend on it: greedy ones are the argmax, sampled ones plain decoding's draw per token.
    """
    if not isinstance(sampling, SamplingParams):
        fail(f"sampling must be a SamplingParams, got {type(sampling).__name__}")
    if len(prompt_ids) == 0:
        fail("the prompt is empty")
    if not isinstance(cached, int) or not 0 <= cached < len(prompt_ids) or (cached and cached > target.length):
        fail(f"cached must be an int in [0, min(len(prompt_ids) - 1, target.length)], got {cached!r}")
    if proposer is None:
        return TokenStream(plain_steps(target, prompt_ids, sampling, prefill_chunk=prefill_chunk, cached=cached))
    from eyas.speculative import SpeculativeGenerator

    gen = SpeculativeGenerator(target, proposer, policy, prefill_chunk=prefill_chunk, draft_gate=draft_gate)
    return TokenStream(gen.steps(prompt_ids, sampling, cached=cached), gen.metrics)


class Generation:
    """Iterate for text pieces as they are generated; `.result` holds the whole outcome at the end.

    steps: a `TokenStream` (its metrics() join the result's at the end) or any iterator of token lists."""

    def __init__(self, steps: Iterable[list[int]], tokenizer: Tokenizer, *, num_prompt_tokens: int,
                 max_tokens: int, stop: list[str] | None = None, ignore_eos: bool = False):
        self._steps = iter(steps)
        self._tok = tokenizer
        self._num_prompt = num_prompt_tokens
        self._max = max_tokens
        self._stop = [s for s in (stop or []) if s]
        self._eos = set() if ignore_eos else set(tokenizer.eos_ids)  # ignore_eos: benchmarks, load tests
        self.result: GenerationResult | None = None
        self._iter = self._run()

    def __iter__(self):
        return self._iter

    def __next__(self) -> str:
        return next(self._iter)

    def close(self) -> None:
        """Stop early (e.g. the client went away): closes the steps; `.result` stays None."""
        self._iter.close()

    def consume(self) -> GenerationResult:
        for _ in self._iter:
            pass
        return self.result

    def _run(self) -> Iterator[str]:
        eos = self._eos
        dec = IncrementalDecoder(self._tok)
        tokens: list[int] = []
        text, sent = "", 0  # full text so far; chars already yielded
        hold = max((len(s) for s in self._stop), default=0) - 1  # chars that could start a stop string
        reason = "length"
        t0 = time.perf_counter()
        t_first = None
        steps = consumed = first = 0  # consumed: ids taken from steps (incl. EOS); first: from the prefill step
        try:
            while len(tokens) < self._max:
                new = next(self._steps)
                steps += 1
                if t_first is None:
                    t_first = time.perf_counter()
                done = False
                for tok in new:
                    consumed += 1
                    if tok in eos:
                        reason, done = "eos", True
                        break
                    tokens.append(int(tok))
                    text += dec.push([tok])
                    if len(tokens) >= self._max:
                        break
                if steps == 1:
                    first = consumed
                if self._stop:
                    cut = min((i for i in (text.find(s, max(0, sent - hold)) for s in self._stop) if i >= 0),
                              default=-1)
                    if cut >= 0:
                        text, reason, done = text[:cut], "stop", True
                safe = len(text) if done or not self._stop else max(sent, len(text) - hold)
                if safe > sent:
                    yield text[sent:safe]
                    sent = safe
                if done:
                    break
            if sent < len(text):
                yield text[sent:]
        finally:
            close = getattr(self._steps, "close", None)
            if close:
                close()
        t_end = time.perf_counter()
        prefill_s = (t_first or t_end) - t0
        decode_s = t_end - (t_first or t_end)
        decoded = consumed - first  # tokens produced by decode steps, after the prefill's first token
        metrics = {
            "num_prompt_tokens": self._num_prompt,
            "num_generated_tokens": len(tokens),
            "prefill_tok_s": self._num_prompt / prefill_s if prefill_s > 0 else 0.0,
            "decode_tok_s": decoded / decode_s if decode_s > 0 and decoded else 0.0,
            "prefill_s": prefill_s,
            "decode_s": decode_s,
            "num_steps": steps,
        }
        if isinstance(self._steps, TokenStream):
            metrics.update(self._steps.metrics())
        self.result = GenerationResult(text, tokens, reason, metrics)
