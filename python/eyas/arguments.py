"""Argument-parser policy shared by the `eyas` CLI and `eyas.train`'s own entry point."""

from __future__ import annotations

import argparse


def no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """allow_abbrev off on `parser` and every subcommand parser below it: a prefix of an option (or
    another tool's spelling, `--prompt` for `--prompt-file`) must fail, not mean the option."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                no_abbreviations(sub)
