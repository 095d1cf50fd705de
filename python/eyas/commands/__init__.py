"""Subcommands of the `eyas` CLI: every module here exposes `register(subparsers)`."""
