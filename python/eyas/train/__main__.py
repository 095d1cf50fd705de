"""`python -m eyas.train ...` == `eyas train-drafter ...`; bad input is a message and exit status 2, as there
(eyas.train sits below eyas.cli, so it cannot call it)."""

import sys

from eyas.train.cli import main

try:
    main(sys.argv[1:])
except ValueError as e:
    print(f"eyas train-drafter: error: {e}", file=sys.stderr)
    sys.exit(2)
