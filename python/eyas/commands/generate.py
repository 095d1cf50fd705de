"""`eyas generate PROMPT`: stream a completion to stdout, speeds to stderr (or one JSON object).
PROMPT (or -p/--prompt, as llama.cpp's CLI takes it) '-' reads standard input; --prompt-file reads a file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eyas.commands.options import add_model_options, add_sampling_options, load_model, sampling_from


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="generate text from a prompt",
                              description="Generate a continuation of PROMPT (streamed to stdout).")
    p.add_argument("prompt", metavar="PROMPT", nargs="?", default=None,
                   help="the prompt; '-' reads it from standard input")
    p.add_argument("-p", "--prompt", dest="prompt_option", metavar="PROMPT", default=None,
                   help="the prompt, as an option instead of the positional PROMPT")
    p.add_argument("--prompt-file", default=None, help="read the prompt from this file")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    p.add_argument("--system", default=None, help="system message (implies --chat)")
    p.add_argument("--max-tokens", type=int, default=256)
    add_sampling_options(p, temperature_help="0 = greedy (default)")
    add_model_options(p)
    p.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    p.set_defaults(func=run)


def read_prompt(args) -> str:
    if sum(v is not None for v in (args.prompt, args.prompt_option, args.prompt_file)) > 1:
        raise ValueError("[generate] give the prompt once: PROMPT, -p/--prompt or --prompt-file")
    if args.prompt_file is not None:
        try:
            return Path(args.prompt_file).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"[generate] cannot read --prompt-file: {e.strerror}: {args.prompt_file}") from None
    prompt = args.prompt if args.prompt is not None else args.prompt_option
    if prompt is None:
        raise ValueError("[generate] no prompt: give PROMPT, -p/--prompt, '-' (standard input) or --prompt-file")
    return sys.stdin.read() if prompt == "-" else prompt


def run(args: argparse.Namespace) -> int:
    text = read_prompt(args)
    model = load_model(args)
    prompt, chat = text, args.chat
    if args.system is not None:
        prompt, chat = [{"role": "system", "content": args.system}, {"role": "user", "content": text}], True
    gen = model.generate(prompt, chat=chat, max_tokens=args.max_tokens, **sampling_from(args, {}), stop=args.stop,
                         stream=True, tree=args.tree)
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
