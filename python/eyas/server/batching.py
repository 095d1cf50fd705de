"""Continuous batching: the forward() calls of the engine's sequence threads meet in one
`Transformer.forward_batch`, so a round of every active request (decode steps and tree verifies
alike) reads the weights once.

Each request runs its own generation (plain or speculative) on its own thread against a
`BatchedTarget`, a proxy of its sequence's Transformer whose small forwards go through the shared
`ForwardBatcher`. A batch runs as soon as every active sequence has a forward waiting, or when
the oldest has waited long enough: `wait_s`, or half the recent batches' time if that is longer
(threads that just got their rows back need a moment of Python before they ask again, and a
straggler left out costs a whole extra forward); sequences join and leave between rounds. Kernels are batch-
invariant, so which requests happen to share a batch never changes a request's bits.
"""

from __future__ import annotations

import threading
import time

import numpy as np

# Forwards of more rows (prefill chunks) run on their own: they would hold a round's decode steps back.
SOLO_ROWS = 64


class _Waiting:
    __slots__ = ("item", "result", "error", "taken", "since")

    def __init__(self, item: dict):
        self.item = item
        self.result: dict | None = None
        self.error: BaseException | None = None
        self.taken = False
        self.since = time.perf_counter()


class ForwardBatcher:
    """leader: the Transformer whose weights and scratch run every batch (the sequences must be
    forks of it). max_rows: rows per batch (the leader's chunk, 256 by default)."""

    def __init__(self, leader, *, max_rows: int = 256, wait_s: float = 0.002):
        self.leader = leader
        self.max_rows = max_rows
        self.wait_s = wait_s
        self._cond = threading.Condition()
        self._queue: list[_Waiting] = []
        self._active = 0  # sequences generating now (each may add one forward per round)
        self._batch_s = 0.0  # moving average of a batch's forward time
        self.batches = 0  # batches run, the forwards and rows in them, the most sequences in one
        self.batched_forwards = 0
        self.batched_rows = 0
        self.widest = 0
        self.failed_batches = 0  # batches that raised, whose forwards then ran one by one

    @property
    def sequences(self) -> int:
        """Sequences generating now."""
        return self._active

    def join(self) -> None:
        with self._cond:
            self._active += 1

    def leave(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify_all()  # the others may now be all that is left of the round

    def forward(self, target, tokens, **kw) -> dict:
        tokens = np.asarray(tokens, dtype=np.int32)
        if len(tokens) > SOLO_ROWS or kw.get("parents") is not None:
            return target.forward(tokens, **kw)
        me = _Waiting({"target": target, "tokens": tokens, **{k: v for k, v in kw.items() if v is not None}})
        with self._cond:
            self._queue.append(me)
            self._cond.notify_all()
            while me.result is None and me.error is None:
                if not me.taken and self._ready():
                    self._run_batch()
                    continue
                timeout = None if me.taken else max(0.0, self._queue[0].since + self._patience() - time.perf_counter())
                self._cond.wait(timeout)
        if me.error is not None:
            raise me.error
        return me.result

    def _ready(self) -> bool:
        """Every active sequence is waiting, the oldest waited long enough, or a batch is full."""
        if not self._queue:
            return False
        rows = sum(len(w.item["tokens"]) for w in self._queue)
        return (len(self._queue) >= self._active or rows >= self.max_rows
                or time.perf_counter() - self._queue[0].since >= self._patience())

    def _patience(self) -> float:
        return max(self.wait_s, 0.5 * self._batch_s)

    def _run_batch(self) -> None:
        """Called with the lock held; runs the queue's head without it."""
        batch, rows = [], 0
        while self._queue and (not batch or rows + len(self._queue[0].item["tokens"]) <= self.max_rows):
            w = self._queue.pop(0)
            w.taken = True
            rows += len(w.item["tokens"])
            batch.append(w)
        self._cond.release()
        t0 = time.perf_counter()
        try:
            self._forward(batch)
        except BaseException as e:  # e.g. KeyboardInterrupt: no waiter may be left without an answer
            for w in batch:
                if w.result is None and w.error is None:
                    w.error = e
            raise
        finally:
            self._cond.acquire()
            self._batch_s = 0.8 * self._batch_s + 0.2 * (time.perf_counter() - t0)
            self.batches += 1
            self.batched_forwards += len(batch)
            self.batched_rows += rows
            self.widest = max(self.widest, len(batch))
            self._cond.notify_all()

    def _forward(self, batch: list[_Waiting]) -> None:
        try:
            results = self.leader.forward_batch([w.item for w in batch])
            for w, r in zip(batch, results):
                w.result = r
        except Exception:  # noqa: BLE001  one bad item must not fail the others: run each on its own
            with self._cond:
                self.failed_batches += 1
            for w in batch:
                item = dict(w.item)
                target = item.pop("target")
                try:
                    w.result = target.forward(item.pop("tokens"), **item)
                except Exception as e:  # noqa: BLE001
                    w.error = e


class BatchedTarget:
    """A sequence's Transformer whose forward() goes through a `ForwardBatcher`; every other
    attribute (commit, truncate, length, ...) is the Transformer's own."""

    def __init__(self, target, batcher: ForwardBatcher):
        self._target = target
        self._batcher = batcher

    def forward(self, tokens, *, mask=None, depths=None, parents=None, logits="last", capture_aux=False,
                commit_all=False):
        return self._batcher.forward(self._target, tokens, mask=mask, depths=depths, parents=parents, logits=logits,
                                     capture_aux=capture_aux, commit_all=commit_all)

    def prefill(self, tokens, *, logits="last", capture_aux=False):
        """The Transformer's prefill (forward + commit of every row in one call), through the batcher."""
        return self.forward(tokens, logits=logits, capture_aux=capture_aux, commit_all=True)

    def decode(self, token, *, logits="last", capture_aux=False):
        return self.prefill(np.array([token], np.int32), logits=logits, capture_aux=capture_aux)

    def __getattr__(self, name):
        return getattr(self._target, name)
