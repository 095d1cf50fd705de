"""The serving engine: a bounded queue, N sequence slots, an admission thread and one thread per
running request.

Each slot is a `Model.fork()` (its own KV cache and drafter state over the shared weights), so a
request's tokens depend only on its own inputs: under load they are the bits it gets alone. The
requests' forwards meet in one `Transformer.forward_batch` per round (continuous batching,
`eyas.server.batching`): every active request's decode step or tree verify reads the weights once.
Idle slots keep their sequence: a prompt that extends one (multi-turn chat) reuses its KV (the
prompt cache; evicted least recently used).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from typing import Callable

import numpy as np

from eyas import generation
from eyas.generation import Generation, TokenStream
from eyas.sampling import SamplingParams
from eyas.server.batching import BatchedTarget, ForwardBatcher
from eyas.server.metrics import ServerMetrics

log = logging.getLogger("eyas.server")


class QueueFull(Exception):
    """More requests are waiting than --max-queue allows."""


class ShuttingDown(Exception):
    """The server no longer accepts work."""


@dataclasses.dataclass
class Request:
    prompt_ids: list[int]
    sampling: SamplingParams
    max_tokens: int
    stop: list[str] | None = None
    logprobs: int | None = None  # None: none; k >= 0: the chosen token's and k alternatives
    ignore_eos: bool = False  # generate max_tokens whatever the model says (load tests, benchmarks)
    # One of Engine.drafter_families(): "none" decodes plain, a sub-family of the server's combining
    # proposer ("auto", "parallel") drafts alone; None (or the server's own family): the server's proposer.
    drafter_family: str | None = None


class Job:
    """One request's life in the engine. `emit(kind, payload)` is called on the worker thread with
    ("text", str), then ("done", dict) or ("error", Exception); the app forwards them to its loop."""

    def __init__(self, request: Request, emit: Callable[[str, object], None]):
        self.request = request
        self._emit = emit
        self.cancelled = threading.Event()
        self.submitted = time.perf_counter()
        self.first_piece: float | None = None

    def emit(self, kind: str, payload) -> None:
        try:
            self._emit(kind, payload)
        except Exception:  # noqa: BLE001  (a receiver's bug must not stop the worker that serves everyone)
            log.exception("eyas.server: a request's event receiver failed; cancelling it")
            self.cancel()

    def cancel(self) -> None:
        """Stop generating (client gone, or shutdown); the worker frees the slot before its next round."""
        self.cancelled.set()


class Slot:
    """A forked model and the ids its caches hold (what a later prompt may reuse)."""

    def __init__(self, model):
        self.model = model
        self.history: list[int] = []
        # The proposer the last generation drove (None: plain decoding). Another one's ingested pairs
        # may belong to an older history than the caches hold, so it cannot reuse them.
        self.drafted_by = model.proposer
        self.last_used = 0.0
        self.job: Job | None = None
        self.gen: Generation | None = None
        self.record: list[int] = []
        self.cached = 0

    def reusable(self, ids: list[int]) -> int:
        """Leading ids of `ids` this slot holds, leaving at least one to prefill."""
        n = min(len(self.history), len(ids) - 1)
        if n <= 0:
            return 0
        a, b = np.asarray(self.history[:n]), np.asarray(ids[:n])
        diff = np.flatnonzero(a != b)
        return int(diff[0]) if diff.size else n


def _recording(steps: TokenStream, sink: list[int]) -> TokenStream:
    """`steps` that also appends every id it yields to `sink` (the slot's history, even if cancelled)."""

    def run():
        try:
            for ids in steps:
                sink.extend(int(i) for i in ids)
                yield ids
        finally:
            steps.close()

    return TokenStream(run(), steps.metrics)


def request_families(proposer) -> list[str]:
    """The `drafter_family` values a request may name on a model drafting with `proposer`: its own
    family, the sub-families of a combining one (`MultiProposer.families`), then "none"."""
    if proposer is None:
        return ["none"]
    return [proposer.family] + list(getattr(proposer, "families", [])) + ["none"]


def request_proposer(proposer, family: str | None):
    """The proposer that drafts a request asking for `family` (checked against `request_families`)."""
    allowed = request_families(proposer)
    if family is None or family == allowed[0]:  # the server's own
        return proposer
    if family == "none":
        return None
    if family not in allowed:
        raise ValueError(f"[serve] drafter_family {family!r}: this server drafts with {', '.join(allowed)}")
    return proposer.pinned(family)


def speculative_summary(metrics: dict) -> dict:
    """The per-response `speculative` object in eyas's metric vocabulary (zeros for plain decoding)."""
    return {
        "num_drafts": int(metrics.get("num_drafts", 0)),
        "num_draft_tokens": int(metrics.get("num_draft_tokens", 0)),
        "num_accepted_tokens": int(metrics.get("num_accepted_tokens", 0)),
        "mean_accepted_length": float(metrics.get("mean_accepted_length", 0.0)),
        "accepted_per_pos": list(metrics.get("accepted_per_pos", [])),
    }


class Engine:
    """model: an `eyas.api.Model` (slot 0 uses it; the others are forks). tree: the draft-tree policy.

    The engine owns its model while it runs: its worker holds every slot's lock, so another
    thread's `model.generate` waits until `shutdown()` instead of clobbering the cached KV."""

    def __init__(self, model, *, max_concurrency: int = 4, max_queue: int = 64, tree=None,
                 metrics: ServerMetrics | None = None, start: bool = True):
        if max_concurrency < 1 or max_queue < 0:
            raise ValueError("[serve] --max-concurrency must be >= 1 and --max-queue >= 0")
        self.model = model
        self.tokenizer = model.tokenizer
        self.tree = tree
        self.max_queue = max_queue
        self.metrics = metrics or ServerMetrics()
        self.slots = [Slot(model)] + [Slot(model.fork()) for _ in range(max_concurrency - 1)]
        for slot in self.slots:  # recurrent layers keep their state at each prompt's end for the next turn
            slot.model.transformer.prefill_checkpoints = True
        self.batcher = ForwardBatcher(model.transformer)
        self.metrics.batcher = self.batcher
        self._waiting: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="eyas-engine", daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        """Start the worker (Engine(start=False) lets a test fill the queue first)."""
        self._thread.start()

    # ---- called from the server's threads -----------------------------------------------------

    def submit(self, request: Request, emit) -> Job:
        job = Job(request, emit)
        with self._cond:
            if self._stopping:
                raise ShuttingDown()
            free = sum(s.job is None for s in self.slots)
            if len(self._waiting) >= self.max_queue + free:  # waiting beyond what free slots take next
                raise QueueFull()
            self._waiting.append(job)
            self.metrics.queue_depth = len(self._waiting)
            self._cond.notify()
        return job

    def shutdown(self, *, cancel: bool = False, timeout: float | None = None) -> None:
        """Stop accepting work; finish (or with cancel=True, cancel) what is queued and running."""
        with self._cond:
            self._stopping = True
            if cancel:
                for job in self._waiting:
                    job.cancel()
                for s in self.slots:
                    if s.job is not None:
                        s.job.cancel()
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def drafter_families(self) -> list[str]:
        """What a request's `drafter_family` may name (`request_families` of the server's proposer)."""
        return request_families(self.model.proposer)

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def active(self) -> int:
        return sum(s.job is not None for s in self.slots)

    @property
    def queued(self) -> int:
        return len(self._waiting)

    # ---- the worker thread --------------------------------------------------------------------

    def _free_slot_exists(self) -> bool:
        return any(s.job is None for s in self.slots)

    def _loop(self) -> None:
        for slot in self.slots:
            slot.model.lock.acquire()
        try:
            self._serve()
        finally:
            for slot in self.slots:
                slot.model.lock.release()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not (self._waiting and self._free_slot_exists()) and not (
                        self._stopping and not any(s.job for s in self.slots)):
                    self._cond.wait()
                if self._stopping and not self._waiting and not any(s.job for s in self.slots):
                    return
                admitted = []
                while self._waiting and self._free_slot_exists():
                    job = self._waiting.popleft()
                    slot = self._choose_slot(job.request.prompt_ids)
                    slot.job = job  # taken: the next admission looks at the other slots
                    admitted.append((job, slot))
                self.metrics.queue_depth = len(self._waiting)
            for job, slot in admitted:
                self._start(job, slot)
                if slot.job is not None:
                    threading.Thread(target=self._run, args=(slot,), name="eyas-sequence", daemon=True).start()
            self.metrics.active = self.active

    def _drafts_pay(self) -> bool:
        """Requests draft only while they run alone: beside others, each request's drafter forwards
        run on their own and its verify rows grow the shared batch, which costs more than the drafts
        save (bench/bench_serve.py). No request's tokens depend on it (greedy: the argmax; sampled:
        plain decoding's draw per token)."""
        return self.batcher.sequences <= 1

    def _run(self, slot: Slot) -> None:
        """A request's thread: its pieces until it ends; its forwards batch with the other threads'."""
        job = slot.job
        self.batcher.join()
        try:
            while slot.job is job:  # _finish/_fail free the slot; the next request gets its own thread
                self._step(slot)
        finally:
            self.batcher.leave()
            with self._cond:
                self._cond.notify_all()  # a slot is free: admit the next request

    def _choose_slot(self, ids: list[int]) -> Slot:
        """The free slot holding the longest prefix of `ids`, else the least recently used (eviction)."""
        free = [s for s in self.slots if s.job is None]
        return max(free, key=lambda s: (s.reusable(ids), -s.last_used))

    def _start(self, job: Job, slot: Slot) -> None:
        req = job.request
        if job.cancelled.is_set():  # cancelled while queued: the slot's cache stays as it was
            slot.job = None
            self.metrics.cancelled += 1
            job.emit("error", Cancelled())
            return
        try:
            model = slot.model
            # A request pinned to one drafter family runs a view of the slot's combining proposer over
            # the same target and aux layers, so its forwards batch with every other request's as usual.
            proposer = request_proposer(model.proposer, req.drafter_family)
            reuse = slot.reusable(req.prompt_ids) if proposer is None or proposer is slot.drafted_by else 0
            cached = generation.reusable(model.transformer, proposer, reuse)
            slot.record = list(req.prompt_ids)
            slot.history = []  # until the generation ends, the caches are in flux
            slot.drafted_by = proposer
            target = BatchedTarget(model.transformer, self.batcher)
            steps = generation.stream(target, req.prompt_ids, req.sampling, proposer=proposer,
                                      policy=self.tree, cached=cached, draft_gate=self._drafts_pay)
            slot.gen = Generation(_recording(steps, slot.record), self.tokenizer,
                                  num_prompt_tokens=len(req.prompt_ids), max_tokens=req.max_tokens, stop=req.stop,
                                  ignore_eos=req.ignore_eos)
            slot.cached = cached
        except Exception as e:  # noqa: BLE001  (a bad request must not take the worker down)
            self._fail(slot, e)

    def _step(self, slot: Slot) -> None:
        job = slot.job
        if job.cancelled.is_set():
            return self._finish(slot, None)
        try:
            piece = next(slot.gen, None)
        except Exception as e:  # noqa: BLE001
            return self._fail(slot, e)
        if piece is not None:
            if job.first_piece is None:
                job.first_piece = time.perf_counter()
                self.metrics.observe_ttft(job.first_piece - job.submitted)
            job.emit("text", piece)
            return
        result = slot.gen.result
        try:
            logprobs = self._logprobs(slot, result.tokens) if job.request.logprobs is not None else None
        except Exception as e:  # noqa: BLE001
            return self._fail(slot, e)
        self._finish(slot, result, logprobs)

    def _finish(self, slot: Slot, result, logprobs=None) -> None:
        job = slot.job
        if slot.gen is not None:
            slot.gen.close()  # a finished generation: no-op; a cancelled one: its steps stop here
        target = slot.model.transformer
        slot.history = slot.record[: target.length]
        slot.gen, slot.job, slot.last_used = None, None, time.perf_counter()
        self.metrics.active = self.active
        if result is None:
            self.metrics.cancelled += 1
            job.emit("error", Cancelled())
            return
        m = result.metrics
        self.metrics.observe_result(len(job.request.prompt_ids), len(result.tokens), slot.cached, m)
        job.emit("done", {
            "text": result.text, "tokens": result.tokens,
            "finish_reason": "length" if result.finish_reason == "length" else "stop",
            "prompt_tokens": len(job.request.prompt_ids), "completion_tokens": len(result.tokens),
            "cached_tokens": slot.cached, "speculative": speculative_summary(m), "logprobs": logprobs,
            "timings": {"prefill_s": m.get("prefill_s", 0.0), "decode_s": m.get("decode_s", 0.0),
                        "decode_tok_s": m.get("decode_tok_s", 0.0)},
        })

    def _fail(self, slot: Slot, error: Exception) -> None:
        job = slot.job
        if slot.gen is not None:
            slot.gen.close()
        slot.gen, slot.job, slot.history = None, None, []  # unknown cache state: start fresh next time
        self.metrics.failed += 1
        self.metrics.active = self.active
        job.emit("error", error)

    def _logprobs(self, slot: Slot, tokens: list[int]) -> list[dict]:
        """Log-probabilities of the generated tokens under the model's raw distribution (before
        temperature and filters), by one more forward over them after the generation: the
        batch-invariant kernels give the rows the decode saw. k alternatives per position."""
        k = slot.job.request.logprobs
        if not tokens:
            return []
        target = slot.model.transformer
        prompt = slot.job.request.prompt_ids
        seq = np.asarray(prompt + tokens, dtype=np.int32)
        first = len(prompt) - 1  # the row that predicts tokens[0]
        # The prompt is committed (generation prefilled it); a target with recurrent layers may have to
        # go back further, to a length it keeps.
        start = target.truncatable(first)
        target.truncate(start)
        out = target.prefill(seq[start:-1], logits="all")
        slot.record = seq[:-1].tolist()
        rows = np.asarray(out["logits"], dtype=np.float64)[first - start:]
        rows = rows - rows.max(axis=1, keepdims=True)
        logp = rows - np.log(np.exp(rows).sum(axis=1, keepdims=True))
        entries = []
        for j, tok in enumerate(tokens):
            top = np.argsort(-logp[j], kind="stable")[:k] if k else []
            entries.append({"token_id": int(tok), "logprob": float(logp[j, tok]),
                            "top": [(int(t), float(logp[j, t])) for t in top]})
        return entries


class Cancelled(Exception):
    """The request was cancelled (client disconnected, or the server shut down)."""
