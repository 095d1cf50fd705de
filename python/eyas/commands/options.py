"""Options several subcommands share (one definition of each flag)."""

from __future__ import annotations

from eyas.api import DEFAULT_DRAFTER_FAMILY, drafter_families


def add_drafter_options(p) -> None:
    p.add_argument("--drafter", default="default",
                   help="drafter checkpoint folder, 'default' (the bundled drafter that fits the model; plain "
                        "decoding if none does) or 'none' (plain decoding)")
    p.add_argument("--drafter-family", choices=drafter_families(), default=DEFAULT_DRAFTER_FAMILY,
                   help=f"which proposer reads the drafter (default: {DEFAULT_DRAFTER_FAMILY}; 'none': plain decoding)")
