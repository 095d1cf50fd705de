"""`eyas serve`: the OpenAI-compatible HTTP server (docs/server.md); needs `pip install 'eyas[serve]'`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from eyas.commands.options import add_model_options, load_model


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="serve an OpenAI-compatible HTTP API",
                              description="Serve /v1/chat/completions, /v1/completions, /v1/models, /health and "
                                          "/metrics (needs: pip install 'eyas[serve]').")
    add_model_options(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", default=os.environ.get("EYAS_API_KEY"),
                   help="require 'Authorization: Bearer KEY' on /v1/* (default: $EYAS_API_KEY, else none)")
    p.add_argument("--max-concurrency", type=int, default=4,
                   help="requests generating at once (each holds a sequence slot: a KV cache of --max-context)")
    p.add_argument("--max-queue", type=int, default=64, help="requests waiting beyond those; more get 429")
    p.add_argument("--served-model-name", default=None, help="the model id clients send (default: the file name)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from eyas.server import Engine, serve
        import fastapi, uvicorn  # noqa: F401,E401
    except ImportError as e:
        raise ValueError(f"[serve] needs the server extra: pip install 'eyas[serve]' ({e.name} is missing)") from None
    if args.max_concurrency < 1 or args.max_queue < 0:
        raise ValueError("[serve] --max-concurrency must be >= 1 and --max-queue >= 0")
    if args.tree is not None:
        from eyas.speculative import TreePolicy

        TreePolicy.parse(args.tree)  # a bad --tree fails here, not in every request
    model = load_model(args)
    model_id = args.served_model_name or Path(str(model.loaded.path)).name
    engine = Engine(model, max_concurrency=args.max_concurrency, max_queue=args.max_queue, tree=args.tree)
    serve(engine, model_id=model_id, host=args.host, port=args.port, api_key=args.api_key, log_level=args.log_level)
    return 0
