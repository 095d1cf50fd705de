"""Server counters and their Prometheus text exposition (format 0.0.4, written by hand: no
client library needed for a handful of counters, gauges and two histograms)."""

from __future__ import annotations

import bisect
import collections
import threading

TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ACCEPTED_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 16)  # drafted tokens accepted per round


class Histogram:
    def __init__(self, buckets):
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += times
        self.sum += value * times
        self.count += times

    def lines(self, name: str) -> list[str]:
        out, running = [], 0
        for le, n in zip([*map(_num, self.buckets), "+Inf"], self.counts):
            running += n
            out.append(f'{name}_bucket{{le="{le}"}} {running}')
        return out + [f"{name}_sum {_num(self.sum)}", f"{name}_count {self.count}"]


def _num(x) -> str:
    return repr(float(x)) if isinstance(x, float) else str(x)


class ServerMetrics:
    """Everything /metrics reports. Updated from the engine thread and the event loop; the lock
    keeps a scrape from seeing a half-updated histogram."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests = collections.Counter()  # (endpoint, status code) -> count
        self.prompt_tokens = 0
        self.cached_prompt_tokens = 0
        self.generation_tokens = 0
        self.num_drafts = 0
        self.num_draft_tokens = 0
        self.num_accepted_tokens = 0
        self.cancelled = 0
        self.failed = 0
        self.queue_depth = 0
        self.active = 0
        self.batcher = None  # the engine's ForwardBatcher: its batch counters are rendered too
        self.ttft = Histogram(TTFT_BUCKETS)
        self.accepted = Histogram(ACCEPTED_BUCKETS)

    def count_request(self, endpoint: str, status: int) -> None:
        with self._lock:
            self.requests[(endpoint, status)] += 1

    def observe_ttft(self, seconds: float) -> None:
        with self._lock:
            self.ttft.observe(seconds)

    def observe_result(self, prompt_tokens: int, generated: int, cached: int, m: dict) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.cached_prompt_tokens += cached
            self.generation_tokens += generated
            drafts = int(m.get("num_drafts", 0))
            self.num_drafts += drafts
            self.num_draft_tokens += int(m.get("num_draft_tokens", 0))
            self.num_accepted_tokens += int(m.get("num_accepted_tokens", 0))
            # accepted_per_pos[d-1] rounds accepted at least d drafted tokens; exactly d is the difference.
            at_least = [drafts, *m.get("accepted_per_pos", []), 0]
            for d in range(len(at_least) - 1):
                if at_least[d] - at_least[d + 1]:
                    self.accepted.observe(d, at_least[d] - at_least[d + 1])

    def _batch_rows(self) -> list[tuple]:
        b = self.batcher
        if b is None:
            return []
        return [("eyas_batches_total", "counter", b.batches, "Batched forwards run (continuous batching)."),
                ("eyas_batched_sequences_total", "counter", b.batched_forwards,
                 "Sequence forwards that ran in a batch; divided by eyas_batches_total: the mean batch width."),
                ("eyas_batched_rows_total", "counter", b.batched_rows, "Token rows that ran in batches."),
                ("eyas_failed_batches_total", "counter", b.failed_batches,
                 "Batches that raised (a bad request among them); their forwards then ran one by one.")]

    def render(self) -> str:
        with self._lock:
            out = ["# HELP eyas_requests_total HTTP requests by endpoint and status code.",
                   "# TYPE eyas_requests_total counter"]
            for (endpoint, status), n in sorted(self.requests.items()):
                out.append(f'eyas_requests_total{{endpoint="{endpoint}",status="{status}"}} {n}')
            for name, kind, value, help_ in (
                ("eyas_prompt_tokens_total", "counter", self.prompt_tokens, "Prompt tokens of finished requests."),
                ("eyas_prompt_cached_tokens_total", "counter", self.cached_prompt_tokens,
                 "Prompt tokens reused from the prompt cache instead of prefilled."),
                ("eyas_generation_tokens_total", "counter", self.generation_tokens, "Generated tokens."),
                ("eyas_num_drafts_total", "counter", self.num_drafts, "Speculative rounds verified."),
                ("eyas_num_draft_tokens_total", "counter", self.num_draft_tokens, "Drafted tokens verified."),
                ("eyas_num_accepted_tokens_total", "counter", self.num_accepted_tokens, "Drafted tokens accepted."),
                ("eyas_requests_cancelled_total", "counter", self.cancelled, "Generations cancelled."),
                ("eyas_requests_failed_total", "counter", self.failed, "Generations that raised an error."),
                ("eyas_queue_depth", "gauge", self.queue_depth, "Requests waiting for a slot."),
                ("eyas_requests_running", "gauge", self.active, "Requests generating now."),
                *self._batch_rows(),
            ):
                out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", f"{name} {value}"]
            out += ["# HELP eyas_time_to_first_token_seconds Submission to the first text piece.",
                    "# TYPE eyas_time_to_first_token_seconds histogram",
                    *self.ttft.lines("eyas_time_to_first_token_seconds"),
                    "# HELP eyas_accepted_tokens_per_round Drafted tokens accepted per speculative round.",
                    "# TYPE eyas_accepted_tokens_per_round histogram",
                    *self.accepted.lines("eyas_accepted_tokens_per_round")]
            return "\n".join(out) + "\n"
