"""`python -m eyas.train ...` == `eyas train-drafter ...`, bad input included: a message and exit status 2."""

import sys

from eyas.cli import main

sys.exit(main(["train-drafter", *sys.argv[1:]]))
