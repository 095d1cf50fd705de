"""Registers `eyas train-drafter` (EAGLE-3 / HASS drafter training; needs the `eyas[train]` extra)."""


def register(subparsers):
    p = subparsers.add_parser("train-drafter", help="train an EAGLE-3 or HASS drafter for a target model (needs torch)")
    # Argument definitions live with the torch code but import no torch themselves.
    from eyas.train.cli import add_arguments

    add_arguments(p)  # each sub-subcommand sets `func`
    return p
