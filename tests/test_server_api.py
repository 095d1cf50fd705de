"""`eyas serve` as users drive it: the official `openai` client against a real server process on
loopback (streaming and not, usage, stop, errors), a load test, bit-identity under load, client
disconnect, graceful shutdown; and 429 from a full queue (in-process, with the worker held)."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.fixtures import tiny_models


def _need(name: str):
    """CI installs the server's test deps (.ci/setup-test-deps): there a missing one fails; locally it skips."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


openai = _need("openai")
httpx = _need("httpx")
_need("fastapi")
_need("uvicorn")

API_KEY = "test-key"
GREEDY = dict(temperature=0)
SEEDED = dict(temperature=0.9, top_p=0.95, seed=11)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """An `eyas serve` process on loopback, ready when /health answers 200."""

    def __init__(self, model: str, *extra: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        model_args = ["--model", model] if model else []  # "": the bundled default model
        cmd = [sys.executable, "-m", "eyas.cli", "serve", *model_args, "--port", str(self.port), "--threads", "1",
               "--log-level", "warning", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"eyas serve exited: {self.proc.stdout.read()}")
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("eyas serve did not become ready")

    def client(self, **kw):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=API_KEY, max_retries=0, timeout=60, **kw)

    def metric(self, name: str) -> float:
        text = httpx.get(self.url + "/metrics").text
        m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    return str(tiny_models.random_llama_gguf(tmp_path_factory.mktemp("serve") / "tiny.gguf"))


@pytest.fixture(scope="module")
def server(tiny_gguf):
    s = Server(tiny_gguf, "--drafter", "none", "--api-key", API_KEY, "--max-concurrency", "4", "--max-queue", "64",
               "--max-context", "1024")
    yield s
    s.stop()


def chat(client, text: str, **kw):
    return client.chat.completions.create(model="tiny.gguf", messages=[{"role": "user", "content": text}], **kw)


def test_models_health_metrics(server):
    assert [m.id for m in server.client().models.list().data] == ["tiny.gguf"]
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    text = httpx.get(server.url + "/metrics").text
    for name in ("eyas_requests_total", "eyas_generation_tokens_total", "eyas_queue_depth",
                 "eyas_time_to_first_token_seconds_bucket", "eyas_accepted_tokens_per_round_bucket",
                 "eyas_batches_total", "eyas_batched_sequences_total", "eyas_batched_rows_total"):
        assert name in text


def test_chat_completion_usage_and_speculative(server):
    r = chat(server.client(), "Hello there", max_tokens=6, **GREEDY)
    assert r.object == "chat.completion" and r.model == "tiny.gguf"
    choice = r.choices[0]
    assert choice.message.role == "assistant" and choice.finish_reason in ("length", "stop")
    assert r.usage.prompt_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.usage.completion_tokens == 6 or choice.finish_reason == "stop"
    newer = chat(server.client(), "Hello there", max_completion_tokens=3, extra_body={"top_k": 5}, **GREEDY)
    assert newer.usage.completion_tokens == 3 or newer.choices[0].finish_reason == "stop"
    spec = r.model_extra["speculative"]
    assert set(spec) == {"num_drafts", "num_draft_tokens", "num_accepted_tokens", "mean_accepted_length",
                         "accepted_per_pos"}


def test_streaming_equals_non_streaming_and_reports_usage(server):
    client = server.client()
    whole = chat(client, "Tell me", max_tokens=12, **GREEDY)
    chunks = list(chat(client, "Tell me", max_tokens=12, stream=True, stream_options={"include_usage": True},
                       **GREEDY))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert "speculative" in chunks[-1].model_extra
    raw = httpx.post(server.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {API_KEY}"},
                     json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 3, "stream": True})
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.text.endswith("data: [DONE]\n\n")


def test_stop_strings(server):
    client = server.client()
    full = client.completions.create(model="tiny.gguf", prompt="Once upon", max_tokens=24, **GREEDY)
    text = full.choices[0].text
    stop = text[6:8]
    cut = text.find(stop)
    assert len(text) >= 8 and cut >= 0
    r = client.completions.create(model="tiny.gguf", prompt="Once upon", max_tokens=24, stop=[stop], **GREEDY)
    assert r.choices[0].text == text[:cut] and r.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="tiny.gguf", prompt="Once upon", max_tokens=24, stop=stop,
                                         stream=True, **GREEDY)
    assert "".join(c.choices[0].text for c in streamed if c.choices) == text[:cut]


def test_completions_echo_and_logprobs(server):
    client = server.client()
    r = client.completions.create(model="tiny.gguf", prompt="Hello", max_tokens=4, echo=True, logprobs=3, **GREEDY)
    lp = r.choices[0].logprobs
    assert r.object == "text_completion" and r.choices[0].text.startswith("Hello")
    assert len(lp.token_logprobs) == r.usage.completion_tokens
    for chosen, top in zip(lp.token_logprobs, lp.top_logprobs):
        # the legacy format keys alternatives by text: tokens of one partial UTF-8 sequence collide
        assert chosen <= 0 and 1 <= len(top) <= 3
        assert all(chosen >= v for v in top.values())  # greedy: the chosen token is the most likely
    c = chat(client, "Hi", max_tokens=3, logprobs=True, top_logprobs=2, **GREEDY)
    entries = c.choices[0].logprobs.content
    assert len(entries) == c.usage.completion_tokens and all(len(e.top_logprobs) == 2 for e in entries)
    assert all(e.logprob == e.top_logprobs[0].logprob for e in entries)


def test_streamed_logprobs_equal_the_whole_responses(server):
    """With stream=true the text streams as usual and the logprobs of every token come in one chunk
    before the finish chunk (they are computed once the text is known): clients that gather
    `logprobs` across chunks get what the non-streaming response holds."""
    client = server.client()
    whole = chat(client, "Hi", max_tokens=6, logprobs=True, top_logprobs=2, **GREEDY)
    chunks = list(chat(client, "Hi", max_tokens=6, logprobs=True, top_logprobs=2, stream=True, **GREEDY))
    gathered = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert [e.model_dump() for e in gathered] == [e.model_dump() for e in whole.choices[0].logprobs.content]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == whole.choices[0].message.content
    full = client.completions.create(model="tiny.gguf", prompt="Hello", max_tokens=5, logprobs=2, **GREEDY)
    parts = [c.choices[0].logprobs for c in client.completions.create(
        model="tiny.gguf", prompt="Hello", max_tokens=5, logprobs=2, stream=True, **GREEDY) if c.choices[0].logprobs]
    assert len(parts) == 1 and parts[0].token_logprobs == full.choices[0].logprobs.token_logprobs
    assert parts[0].tokens == full.choices[0].logprobs.tokens


def test_seed_reproduces(server):
    client = server.client()
    a = chat(client, "Pick a word", max_tokens=10, **SEEDED).choices[0].message.content
    b = chat(client, "Pick a word", max_tokens=10, **SEEDED).choices[0].message.content
    assert a == b


@pytest.mark.parametrize("body, status, param", [
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, 400, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 2}, 400, "n"),
    ({"messages": [{"role": "user", "content": "x"}], "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
    ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}, 400, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5000}, 400, "max_tokens"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, 400, "messages[0]"),
    ({"messages": []}, 400, "messages"),
    ({"messages": [{"role": "user", "content": "x"}], "model": "gpt-9"}, 404, "model"),
])
def test_bad_requests_get_openai_errors(server, body, status, param):
    r = httpx.post(server.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {API_KEY}"}, json=body)
    assert r.status_code == status
    err = r.json()["error"]
    assert err["param"] == param and err["message"] and err["type"]


def test_error_statuses_through_the_client(server):
    with pytest.raises(openai.BadRequestError):
        chat(server.client(), "x", temperature=5)
    with pytest.raises(openai.NotFoundError):
        server.client().chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    bad_key = openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        chat(bad_key, "x", max_tokens=2)
    assert httpx.get(server.url + "/v1/models").status_code == 401  # no key at all
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    big = httpx.post(server.url + "/v1/completions", headers=headers, content=b" " * (5 * 1024 * 1024))
    assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
    broken = httpx.post(server.url + "/v1/completions", headers=headers, content=b"{not json")
    assert broken.status_code == 422 and "error" in broken.json()
    assert httpx.get(server.url + "/v1/nothing", headers=headers).status_code == 404
    assert chat(server.client(), "still alive", max_tokens=2).usage.completion_tokens >= 1


LONG = ("--drafter", "none", "--max-context", "16384", "--max-concurrency", "1")  # generations of seconds


def wait_for_metric(server: Server, name: str, value: float, timeout: float = 20) -> None:
    deadline = time.time() + timeout
    while server.metric(name) < value and time.time() < deadline:
        time.sleep(0.05)
    assert server.metric(name) == value


def test_client_disconnect_cancels_the_generation(tiny_gguf):
    s = Server(tiny_gguf, *LONG)
    try:
        body = {"prompt": "Go on", "max_tokens": 16000, "ignore_eos": True, "temperature": 0, "stream": True}
        with httpx.stream("POST", s.url + "/v1/completions", json=body) as r:
            next(r.iter_lines())  # the first event: the request is generating; now hang up
        wait_for_metric(s, "eyas_requests_cancelled_total", 1)
        assert s.metric("eyas_requests_running") == 0  # the slot is free again
        with pytest.raises(httpx.TimeoutException):  # not streaming: the client gives up waiting
            httpx.post(s.url + "/v1/completions", json={**body, "stream": False}, timeout=0.5)
        wait_for_metric(s, "eyas_requests_cancelled_total", 2)
        assert s.metric("eyas_requests_running") == 0
        r = httpx.post(s.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 3, "ignore_eos": True})
        assert r.json()["usage"]["completion_tokens"] == 3
    finally:
        s.stop()


def test_load_and_bit_identity_under_load(server, capsys):
    """32 concurrent streaming clients on 4 slots: none fails, and each greedy / seeded request's text
    is the text it gets alone. Reports time to first token and aggregate tok/s."""
    client = server.client()
    prompts = [f"Story number {i}:" for i in range(32)]
    params = [GREEDY if i % 2 else SEEDED for i in range(32)]
    alone = [chat(client, p, max_tokens=16, **kw).choices[0].message.content for p, kw in zip(prompts[:8], params)]

    async def one(aclient, prompt, kw):
        t0 = time.perf_counter()
        ttft, text, tokens = None, "", 0
        stream = await aclient.chat.completions.create(
            model="tiny.gguf", messages=[{"role": "user", "content": prompt}], max_tokens=16, stream=True,
            stream_options={"include_usage": True}, **kw)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                ttft = ttft or time.perf_counter() - t0
                text += chunk.choices[0].delta.content
            if chunk.usage:
                tokens = chunk.usage.completion_tokens
        return ttft or time.perf_counter() - t0, text, tokens

    async def run_all():
        async with openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0,
                                      timeout=120) as aclient:
            return await asyncio.gather(*(one(aclient, p, kw) for p, kw in zip(prompts, params)),
                                        return_exceptions=True)

    t0 = time.perf_counter()
    results = asyncio.run(asyncio.wait_for(run_all(), 180))
    elapsed = time.perf_counter() - t0
    failures = [r for r in results if isinstance(r, BaseException)]
    assert failures == []
    assert [r[1] for r in results[:8]] == alone
    ttfts = sorted(r[0] for r in results)
    tokens = sum(r[2] for r in results)
    p50, p99 = ttfts[len(ttfts) // 2], ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))]
    with capsys.disabled():  # the report shows in every run, not only with -s
        print(f"\n[load] 32 streaming clients, 0 failed, time to first token p50 {p50 * 1000:.0f} ms, "
              f"p99 {p99 * 1000:.0f} ms, aggregate {tokens / elapsed:.0f} tok/s")
    assert tokens > 0


def test_graceful_shutdown_finishes_in_flight_work(tiny_gguf):
    s = Server(tiny_gguf, *LONG)
    body = {"prompt": "Go", "max_tokens": 2000, "ignore_eos": True, "temperature": 0, "stream": True}
    lines = []
    with httpx.stream("POST", s.url + "/v1/completions", json=body, timeout=60) as r:
        it = r.iter_lines()
        lines.append(next(it))
        s.proc.send_signal(signal.SIGTERM)  # mid-generation
        lines += list(it)
    # uvicorn re-raises the SIGTERM it handled once it is done, so the exit status may say so
    assert s.stop() in (0, -signal.SIGTERM)
    events = [json.loads(x[len("data: "):]) for x in lines if x.startswith("data: {")]
    assert [x for x in lines if x][-1] == "data: [DONE]"
    assert events[-1]["choices"][0]["finish_reason"] == "length"  # all 2000 tokens: finished, not cancelled
    assert "Traceback" not in s.proc.stdout.read()


def test_full_queue_answers_429(tiny_gguf, monkeypatch):
    import eyas.api as api
    from eyas.server import Engine, create_app
    from tests.test_cli import one_thread_models  # noqa: F401

    model = api.load(tiny_gguf, drafter="none")
    engine = Engine(model, max_concurrency=1, max_queue=0, start=False)  # the worker waits: nothing leaves
    app = create_app(engine, model_id="tiny")
    body = {"prompt": "Hi", "max_tokens": 2}

    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://eyas") as c:
            first = asyncio.create_task(c.post("/v1/completions", json=body))
            while engine.queued == 0:
                await asyncio.sleep(0.01)
            full = await c.post("/v1/completions", json=body)
            engine.start()
            return full, await first

    full, first = asyncio.run(go())
    engine.shutdown()
    assert full.status_code == 429 and full.headers["retry-after"] == "1"
    assert full.json()["error"]["code"] == "queue_full"
    assert first.status_code == 200


@pytest.mark.slow
def test_default_model_end_to_end():
    """The bundled model and drafter behind the real server: a sensible answer, speculative stats."""
    from tests.fixtures.default_model import load_or_skip

    load_or_skip()
    s = Server("", "--max-context", "512", "--max-concurrency", "2")
    try:
        client = s.client()
        model_id = client.models.list().data[0].id
        r = client.completions.create(model=model_id, prompt="The capital of France is", max_tokens=4, temperature=0)
        assert "Paris" in r.choices[0].text
        c = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "Say hello."}],
                                           max_tokens=12, seed=1)
        assert c.usage.completion_tokens >= 1 and c.model_extra["speculative"]["num_drafts"] >= 1
    finally:
        s.stop()


def test_a_handler_bug_answers_500_and_the_server_keeps_serving(tiny_gguf, monkeypatch):
    import eyas.api as api
    from eyas.server import Engine, create_app

    model = api.load(tiny_gguf, drafter="none")
    engine = Engine(model, max_concurrency=1, max_queue=4)
    app = create_app(engine, model_id="tiny")
    real = model.encode_prompt
    monkeypatch.setattr(model, "encode_prompt", lambda *a, **k: 1 / 0)
    body = {"prompt": "Hi", "max_tokens": 2}

    async def go():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://eyas") as c:
            broken = await c.post("/v1/completions", json=body)
            monkeypatch.setattr(model, "encode_prompt", real)
            return broken, await c.post("/v1/completions", json=body)

    try:
        broken, fine = asyncio.run(go())
    finally:
        engine.shutdown()
    assert broken.status_code == 500 and broken.json()["error"]["code"] == "internal_error"
    assert fine.status_code == 200 and fine.json()["usage"]["completion_tokens"] >= 1
