"""Hostile HTTP requests against a real `eyas serve` process: malformed, oversize, chunked and
deeply nested bodies, absurd parameters, text that is not Unicode, slow and disconnecting clients.
Each gets an OpenAI-style error with the right status (never a 500), and the server keeps serving."""

from __future__ import annotations

import signal
import socket
import time

import pytest

from tests.test_server_api import API_KEY, Server, httpx, tiny_gguf  # noqa: F401  (fixture)

AUTH = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
MAX_BODY = 4 * 1024 * 1024  # the server's default (eyas.server.app.MAX_BODY_BYTES)
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tiny_gguf):  # noqa: F811
    s = Server(tiny_gguf, "--drafter", "none", "--api-key", API_KEY, "--max-context", "256")
    yield s
    assert s.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the SIGTERM it handled
    assert "Traceback" not in s.proc.stdout.read()  # no handler blew up on the way


def chat_body(**kw) -> dict:
    return {"messages": USER, "max_tokens": 2, **kw}


# (id, route, raw body bytes or a JSON-able value, expected status, expected error code or param)
CASES = [
    ("not_json", "chat", b"{nope", 422, "invalid_json"),
    ("empty_body", "chat", b"", 422, "invalid_json"),
    ("json_array", "chat", b"[1, 2]", 422, "invalid_json"),
    ("json_string", "chat", b'"hello"', 422, "invalid_json"),
    ("invalid_utf8", "chat", b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', 422, "invalid_json"),
    ("deeply_nested", "chat", b"[" * 100000 + b"]" * 100000, 422, "invalid_json"),
    ("lone_surrogate_chat", "chat", b'{"messages": [{"role": "user", "content": "a\\ud800b"}], "max_tokens": 2}',
     400, "messages"),
    ("lone_surrogate_prompt", "completions", b'{"prompt": "a\\ud800b", "max_tokens": 2}', 400, "prompt"),
    ("temperature_nan", "chat", b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
     400, "temperature"),
    ("temperature_overflows_to_inf", "chat", b'{"messages": [{"role": "user", "content": "x"}], "temperature": 1e400}',
     400, "temperature"),
    ("temperature_string", "chat", chat_body(temperature="hot"), 400, "temperature"),
    ("top_p_negative", "chat", chat_body(top_p=-1), 400, "top_p"),
    ("top_k_huge", "chat", chat_body(top_k=10**30), 400, "top_k"),
    ("seed_huge", "chat", chat_body(seed=10**40), 400, "seed"),
    ("max_tokens_negative", "chat", chat_body(max_tokens=-5), 400, "max_tokens"),
    ("max_tokens_huge", "chat", chat_body(max_tokens=10**12), 400, "max_tokens"),
    ("max_tokens_float", "chat", chat_body(max_tokens=2.5), 400, "max_tokens"),
    ("n_two", "chat", chat_body(n=2), 400, "n"),
    ("logprobs_too_many", "chat", chat_body(logprobs=True, top_logprobs=1000), 400, "top_logprobs"),
    ("stop_not_strings", "chat", chat_body(stop=[1, 2]), 400, "stop"),
    ("stream_options_not_object", "chat", chat_body(stream_options=[1]), 400, "stream_options"),
    ("stream_not_bool", "chat", chat_body(stream="yes"), 400, "stream"),
    ("messages_missing", "chat", {"max_tokens": 2}, 400, "messages"),
    ("message_content_number", "chat", {"messages": [{"role": "user", "content": 5}]}, 400, "messages[0].content"),
    ("message_part_not_text", "chat", {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
     400, "messages[0].content"),
    ("prompt_ids_out_of_range", "completions", {"prompt": [1, 10**9], "max_tokens": 2}, 400, "prompt"),
    ("prompt_ids_negative", "completions", {"prompt": [-1], "max_tokens": 2}, 400, "prompt"),
    ("prompt_ids_bools", "completions", {"prompt": [True, False]}, 400, "prompt"),
    ("prompt_nested_lists", "completions", {"prompt": [[1, 2], [3]]}, 400, "prompt"),
    ("prompt_too_long_for_context", "completions", {"prompt": "hello " * 400, "max_tokens": 2}, 400,
     "context_length_exceeded"),
    ("model_unknown", "chat", chat_body(model="gpt-9"), 404, "model"),
]
ROUTES = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


@pytest.mark.parametrize("route, body, status, where", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_hostile_body_gets_a_clear_error(server, route, body, status, where):
    kw = {"content": body} if isinstance(body, bytes) else {"json": body}
    r = httpx.post(server.url + ROUTES[route], headers=AUTH, timeout=30, **kw)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["message"] and where in (err.get("code"), err.get("param")), err


def test_oversize_body_with_a_declared_length(server):
    r = httpx.post(server.url + ROUTES["chat"], headers=AUTH, content=b" " * (MAX_BODY + 1))
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"


def test_oversize_chunked_body_is_cut_off_as_it_arrives(server):
    def chunks():  # no Content-Length: the server must count, not trust a header
        for _ in range(MAX_BODY // 65536 + 2):
            yield b" " * 65536

    r = httpx.post(server.url + ROUTES["chat"], headers=AUTH, content=chunks())
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"


def test_wrong_method_and_route(server):
    assert httpx.get(server.url + ROUTES["chat"], headers=AUTH).status_code == 405
    r = httpx.post(server.url + "/v1/../../etc/passwd", headers=AUTH, json={})
    assert r.status_code == 404


def raw_connection(server) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return s


def test_slow_client_does_not_block_others(server):
    """A client that sends half a body and stalls holds its own connection only."""
    slow = raw_connection(server)
    slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + API_KEY.encode()
                 + b"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"messages\": ")
    try:
        start = time.time()
        r = httpx.post(server.url + ROUTES["chat"], headers=AUTH, json=chat_body(), timeout=30)
        assert r.status_code == 200 and time.time() - start < 30
    finally:
        slow.close()


def test_clients_that_hang_up_mid_request(server):
    """Disconnects mid-headers, mid-body and right after a complete request leave the server serving."""
    body = b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50, "ignore_eos": true}'
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + API_KEY.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    for data in (head[:20], head + body[:10], head + body):
        for _ in range(5):
            s = raw_connection(server)
            s.sendall(data)
            s.close()
    # ignore_eos: a sampled first token may be EOS on the random model, which would end the reply empty.
    r = httpx.post(server.url + ROUTES["chat"], headers=AUTH, json=chat_body(ignore_eos=True), timeout=30)
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1


def test_oversize_headers_are_refused(server):
    try:  # uvicorn answers 400 or just closes the connection
        r = httpx.get(server.url + "/health", headers={"X-Big": "a" * (200 * 1024)})
        assert r.status_code in (400, 413, 431)
    except httpx.TransportError:
        pass
    assert httpx.get(server.url + "/health").status_code == 200


def test_the_server_is_healthy_after_the_catalogue(server):
    assert server.proc.poll() is None
    assert server.metric('eyas_http_requests_total{route="/v1/chat/completions",status="500"}') == 0
    r = httpx.post(server.url + ROUTES["chat"], headers=AUTH, json=chat_body(), timeout=30)
    assert r.status_code == 200
