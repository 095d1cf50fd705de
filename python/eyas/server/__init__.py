"""`eyas serve`: an OpenAI-compatible HTTP server (`pip install 'eyas[serve]'`: FastAPI + uvicorn).

    engine = Engine(eyas.load(...), max_concurrency=4, max_queue=64)
    app = create_app(engine, model_id="smollm2")          # an ASGI app
    serve(engine, model_id="smollm2", host="127.0.0.1", port=8000)

The engine (eyas.server.engine) schedules requests over sequence slots; the app (eyas.server.app)
speaks the OpenAI protocol. docs/server.md describes both.
"""

from __future__ import annotations

from eyas.server.engine import Engine, Request

__all__ = ["Engine", "Request", "create_app", "serve"]

GRACEFUL_SHUTDOWN_S = 30  # in-flight requests get this long to finish after SIGINT/SIGTERM


def create_app(engine: Engine, **kw):
    from eyas.server.app import create_app as make

    return make(engine, **kw)


def serve(engine: Engine, *, model_id: str, host: str = "127.0.0.1", port: int = 8000, api_key: str | None = None,
          log_level: str = "info") -> None:
    """Serve until SIGINT/SIGTERM: then stop accepting, let in-flight requests finish (up to
    GRACEFUL_SHUTDOWN_S), cancel the rest and stop the engine."""
    import uvicorn

    app = create_app(engine, model_id=model_id, api_key=api_key)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level,
                            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    try:
        uvicorn.Server(config).run()
    finally:
        engine.shutdown(cancel=True, timeout=GRACEFUL_SHUTDOWN_S)
