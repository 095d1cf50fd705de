"""The OpenAI-compatible HTTP API over an `Engine` (FastAPI on uvicorn).

Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health, GET /metrics.
Errors are OpenAI-style bodies; no request can take the process down (a handler bug answers 500).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.requests import ClientDisconnect
from starlette.exceptions import HTTPException as StarletteHTTPException

from eyas.server import protocol
from eyas.server.engine import Cancelled, Engine, QueueFull, Request as EngineRequest, ShuttingDown
from eyas.server.protocol import ApiError

MAX_BODY_BYTES = 4 * 1024 * 1024
RETRY_AFTER_S = 1
DISCONNECT_POLL_S = 0.25  # how often a non-streaming request checks that its client is still there
SHUTDOWN_JOIN_S = 10  # how long shutdown waits for the engine's current round


def create_app(engine: Engine, *, model_id: str, api_key: str | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        # uvicorn has let in-flight requests finish (or cancelled them at its graceful timeout)
        await asyncio.to_thread(engine.shutdown, cancel=True, timeout=SHUTDOWN_JOIN_S)

    app = FastAPI(title="eyas", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    model = engine.model
    metrics = engine.metrics
    defaults = model.recommended_sampling()
    families = engine.drafter_families()  # what a request's `drafter_family` may name
    app.state.engine = engine

    app.add_middleware(Guard, api_key=api_key, metrics=metrics)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        return error_response(e)

    @app.exception_handler(Exception)
    async def bug(request: Request, e: Exception):  # a bug answers 500; uvicorn logs it and keeps serving
        return error_response(ApiError(500, f"internal error ({type(e).__name__})", code="internal_error"))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException):
        message = "no such route" if e.status_code == 404 else str(e.detail)
        return error_response(ApiError(e.status_code, f"{request.method} {request.url.path}: {message}"))

    @app.get("/health")
    async def health():
        if engine.stopping:
            return JSONResponse({"status": "shutting down"}, status_code=503)
        return {"status": "ok"}

    @app.get("/metrics")
    async def prometheus():
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    def model_card() -> dict:
        return {"id": model_id, "object": "model", "created": CREATED, "owned_by": "eyas"}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{name:path}")
    async def one_model(name: str):
        if name != model_id:
            raise ApiError(404, f"model {name!r} does not exist; this server serves {model_id!r}", "model",
                           "model_not_found")
        return model_card()

    async def read_body(request: Request) -> dict:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            raise ApiError(413, f"request body over {max_body_bytes} bytes", code="request_too_large")
        raw = bytearray()
        try:
            async for chunk in request.stream():  # chunked bodies declare no length: count as they come
                raw += chunk
                if len(raw) > max_body_bytes:
                    raise ApiError(413, f"request body over {max_body_bytes} bytes", code="request_too_large")
        except ClientDisconnect:  # hung up mid-body: nobody reads the answer (499, as nginx counts it)
            raise ApiError(499, "client disconnected while sending the body") from None
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            raise ApiError(422, "the body is not valid JSON", code="invalid_json") from None
        if not isinstance(body, dict):
            raise ApiError(422, "the body must be a JSON object", code="invalid_json")
        name = body.get("model")
        if name is not None and name != model_id:
            raise ApiError(404, f"model {name!r} does not exist; this server serves {model_id!r}", "model",
                           "model_not_found")
        return body

    def plan(ids: list[int], params: protocol.Params) -> EngineRequest:
        room = model.max_context - len(ids)
        if room < 1:
            raise ApiError(400, f"the prompt has {len(ids)} tokens; this server's context is {model.max_context}",
                           "messages", "context_length_exceeded")
        max_tokens = params.max_tokens if params.max_tokens is not None else room
        if max_tokens > room:
            raise ApiError(400, f"prompt ({len(ids)} tokens) + max_tokens ({max_tokens}) exceeds the context "
                           f"({model.max_context} tokens)", "max_tokens", "context_length_exceeded")
        return EngineRequest(ids, params.sampling, max_tokens, params.stop, params.logprobs, params.ignore_eos,
                             params.drafter_family)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await read_body(request)
        msgs = protocol.messages(body)
        params = protocol.common(body, defaults, chat=True, drafter_families=families)
        try:
            ids = model.encode_prompt(msgs, chat=True)
        except ValueError as e:
            raise ApiError(400, str(e), "messages") from None
        return await run(request, plan(ids, params), params, ChatShape(model_id, model.tokenizer))

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await read_body(request)
        prompt = protocol.prompt(body)
        params = protocol.common(body, defaults, chat=False, drafter_families=families)
        echo = protocol.boolean(body, "echo")
        if isinstance(prompt, str):
            try:
                ids, text = model.encode_prompt(prompt), prompt
            except ValueError as e:
                raise ApiError(400, str(e), "prompt") from None
        else:
            if not all(0 <= t < model.tokenizer.vocab_size for t in prompt):
                raise protocol.bad("prompt", f"token ids must be in [0, {model.tokenizer.vocab_size})")
            ids, text = prompt, model.tokenizer.decode(prompt)
        if not ids:
            raise protocol.bad("prompt", "encodes to no tokens")
        if params.max_tokens is None:
            params.max_tokens = min(DEFAULT_COMPLETION_TOKENS, max(model.max_context - len(ids), 1))
        shape = CompletionShape(model_id, model.tokenizer, text if echo else "")
        return await run(request, plan(ids, params), params, shape)

    async def run(request: Request, req: EngineRequest, params: protocol.Params, shape):
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()

        def emit(kind, payload):  # engine thread -> this loop; the loop may be gone after shutdown
            try:
                loop.call_soon_threadsafe(events.put_nowait, (kind, payload))
            except RuntimeError:
                pass

        try:
            job = engine.submit(req, emit)
        except QueueFull:
            raise ApiError(429, "the server is busy: its queue is full; retry shortly", code="queue_full",
                           headers={"Retry-After": str(RETRY_AFTER_S)}) from None
        except ShuttingDown:
            raise ApiError(503, "the server is shutting down", code="shutting_down") from None
        if params.stream:
            return StreamingResponse(sse(job, events, shape, params.include_usage), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        gone = asyncio.Event()

        async def watch():  # a client that hangs up cancels its generation
            while not await request.is_disconnected():
                await asyncio.sleep(DISCONNECT_POLL_S)
            gone.set()
            job.cancel()

        watcher = asyncio.create_task(watch())
        try:
            while True:
                kind, payload = await events.get()
                if kind == "done":
                    return JSONResponse(shape.response(payload))
                if kind == "error":
                    # 499 (the client closed the request, as nginx counts it): for /metrics, nobody reads it
                    raise ApiError(499, "client disconnected") if gone.is_set() else generation_error(payload)
        finally:
            watcher.cancel()
            job.cancel()  # no-op when done; frees the slot when the handler was cancelled

    async def sse(job, events: asyncio.Queue, shape, include_usage: bool):
        try:
            yield event(shape.chunk(role=True))
            while True:
                kind, payload = await events.get()
                if kind == "text":
                    yield event(shape.chunk(text=payload))
                elif kind == "done":
                    if payload["logprobs"] is not None:  # computed once the text is known: one chunk for all
                        yield event(shape.chunk(text="", logprobs=payload["logprobs"]))
                    yield event(shape.chunk(finish=payload))
                    if include_usage:
                        yield event(shape.usage_chunk(payload))
                    break
                else:
                    yield event(generation_error(payload).body())
                    break
            yield "data: [DONE]\n\n"
        finally:
            job.cancel()  # the client went away mid-stream, or the stream ended: free the slot

    return app


class Guard:
    """ASGI middleware: the API key check on /v1/* and the request counter. A plain ASGI wrapper
    (not Starlette's BaseHTTPMiddleware) so handlers still see the client disconnect."""

    def __init__(self, app, *, api_key: str | None, metrics):
        self.app, self.api_key, self.metrics = app, api_key, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, status = scope["path"], [500]

        async def send_status(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            if self.api_key is not None and path.startswith("/v1/"):
                given = dict(scope["headers"]).get(b"authorization", b"")
                if not hmac.compare_digest(given, f"Bearer {self.api_key}".encode()):
                    e = ApiError(401, "invalid or missing API key (Authorization: Bearer KEY)", code="invalid_api_key")
                    return await error_response(e)(scope, receive, send_status)
            await self.app(scope, receive, send_status)
        finally:
            if path in ROUTES:
                self.metrics.count_request(path, status[0])


ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics")
CREATED = int(time.time())
DEFAULT_COMPLETION_TOKENS = 16  # OpenAI's default max_tokens for /v1/completions


def error_response(e: ApiError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


def generation_error(e: Exception) -> ApiError:
    if isinstance(e, Cancelled):
        return ApiError(503, "the generation was cancelled: the server is shutting down", code="cancelled")
    if isinstance(e, ValueError):
        return ApiError(400, str(e), code="invalid_value")
    return ApiError(500, f"generation failed: {type(e).__name__}", code="internal_error")


def event(obj: dict) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


def usage(done: dict) -> dict:
    return {"prompt_tokens": done["prompt_tokens"], "completion_tokens": done["completion_tokens"],
            "total_tokens": done["prompt_tokens"] + done["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": done["cached_tokens"]}}


class _Shape:
    """Builds one endpoint's response objects (ids, timestamps, field names)."""

    object_name = ""
    chunk_name = ""

    def __init__(self, model_id: str, tokenizer, prefix: str = ""):
        self.model_id, self.tokenizer, self.prefix = model_id, tokenizer, prefix
        self.id = f"{self.id_prefix}-{secrets.token_hex(12)}"
        self.created = int(time.time())

    def envelope(self, name: str, choices: list, **extra) -> dict:
        return {"id": self.id, "object": name, "created": self.created, "model": self.model_id,
                "choices": choices, **extra}

    def token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id], skip_special=False)

    def usage_chunk(self, done: dict) -> dict:
        return self.envelope(self.chunk_name, [], usage=usage(done), speculative=done["speculative"])

    def response(self, done: dict) -> dict:
        return self.envelope(self.object_name, [self.choice(done)], usage=usage(done),
                             speculative=done["speculative"], timings=done["timings"])


class ChatShape(_Shape):
    object_name, chunk_name, id_prefix = "chat.completion", "chat.completion.chunk", "chatcmpl"

    def choice(self, done: dict) -> dict:
        return {"index": 0, "message": {"role": "assistant", "content": done["text"]},
                "logprobs": self.logprobs(done["logprobs"]), "finish_reason": done["finish_reason"]}

    def chunk(self, *, role: bool = False, text: str | None = None, finish: dict | None = None,
              logprobs: list | None = None) -> dict:
        delta = {"role": "assistant", "content": ""} if role else ({"content": text} if text is not None else {})
        reason = finish["finish_reason"] if finish else None
        extra = {"speculative": finish["speculative"]} if finish else {}
        return self.envelope(self.chunk_name, [{"index": 0, "delta": delta, "logprobs": self.logprobs(logprobs),
                                                "finish_reason": reason}], **extra)

    def logprobs(self, entries) -> dict | None:
        if entries is None:
            return None

        def one(t, lp):
            s = self.token_text(t)
            return {"token": s, "logprob": lp, "bytes": list(s.encode("utf-8"))}

        return {"content": [{**one(e["token_id"], e["logprob"]), "top_logprobs": [one(t, lp) for t, lp in e["top"]]}
                            for e in entries]}


class CompletionShape(_Shape):
    object_name, chunk_name, id_prefix = "text_completion", "text_completion", "cmpl"

    def choice(self, done: dict) -> dict:
        return {"index": 0, "text": self.prefix + done["text"], "logprobs": self.logprobs(done["logprobs"]),
                "finish_reason": done["finish_reason"]}

    def chunk(self, *, role: bool = False, text: str | None = None, finish: dict | None = None,
              logprobs: list | None = None) -> dict:
        if role:
            text = self.prefix  # echo: the prompt is the first piece
        reason = finish["finish_reason"] if finish else None
        extra = {"speculative": finish["speculative"]} if finish else {}
        return self.envelope(self.chunk_name, [{"index": 0, "text": text or "", "logprobs": self.logprobs(logprobs),
                                                "finish_reason": reason}], **extra)

    def logprobs(self, entries) -> dict | None:
        if entries is None:
            return None
        tokens = [self.token_text(e["token_id"]) for e in entries]
        offsets, at = [], len(self.prefix)
        for s in tokens:
            offsets.append(at)
            at += len(s)
        return {"tokens": tokens, "token_logprobs": [e["logprob"] for e in entries],
                "top_logprobs": [{self.token_text(t): lp for t, lp in e["top"]} for e in entries],
                "text_offset": offsets}
