"""`eyas generate PROMPT`: stream a completion to stdout, speeds to stderr (or one JSON object)."""

from __future__ import annotations

import argparse
import json
import sys

from eyas.api import DEFAULT_KV_DTYPE, DEFAULT_MAX_CONTEXT, KV_DTYPES
from eyas.commands.options import add_drafter_options


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="generate text from a prompt",
                              description="Generate a continuation of PROMPT (streamed to stdout).")
    p.add_argument("prompt", metavar="PROMPT")
    p.add_argument("--model", default=None, help="GGUF file or Hugging Face folder (default: bundled SmolLM2-135M)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0, help="0 = no limit")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--max-context", type=int, default=DEFAULT_MAX_CONTEXT)
    p.add_argument("--kv-dtype", choices=KV_DTYPES, default=DEFAULT_KV_DTYPE,
                   help="KV cache precision: f16 (default, as llama.cpp: half the bytes per token of context) "
                        "or f32")
    add_drafter_options(p)
    p.add_argument("--tree", default=None,
                   help="draft tree 'TOP_K,DEPTH,TOTAL', 'chain:DEPTH' or 'auto[:MAX_DEPTH]' (default: the drafter's "
                        "recommendation, else auto: a chain of 0-3 tokens per round, as deep as pays)")
    p.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import eyas

    model = eyas.load(args.model, drafter=args.drafter, drafter_family=args.drafter_family, threads=args.threads,
                      max_context=args.max_context, kv_dtype=args.kv_dtype)
    gen = model.generate(args.prompt, chat=args.chat, max_tokens=args.max_tokens, temperature=args.temperature,
                         top_p=args.top_p, top_k=args.top_k, seed=args.seed, stop=args.stop, stream=True,
                         tree=args.tree)
    if args.json:
        r = gen.consume()
        print(json.dumps({"text": r.text, "tokens": r.tokens, "finish_reason": r.finish_reason,
                          "metrics": r.metrics}))
        return 0
    for piece in gen:
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
    m = gen.result.metrics
    print(f"prompt: {m['num_prompt_tokens']} tokens, {m['prefill_tok_s']:.1f} tok/s | "
          f"decode: {m['num_generated_tokens']} tokens, {m['decode_tok_s']:.1f} tok/s", file=sys.stderr)
    return 0
