"""`python -m eyas.train ...` == `eyas train-drafter ...`."""

from eyas.train.cli import main

main()
