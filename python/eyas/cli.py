"""`eyas` command line: each module in eyas/commands/ adds a subcommand via `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import eyas.commands
from eyas.arguments import no_abbreviations


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eyas", description="Fast local LLM inference with EAGLE-3 speculative decoding.")
    from eyas import __version__

    parser.add_argument("--version", action="version", version=f"eyas {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(eyas.commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"eyas.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    no_abbreviations(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as e:  # bad input, bad files: a message, not a traceback
        print(f"eyas: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
