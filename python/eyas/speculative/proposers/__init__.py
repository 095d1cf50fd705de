"""Built-in proposer families; importing a module registers its family."""

from eyas.speculative.proposers import eagle3, hydra, lookup, mtp  # noqa: F401
from eyas.speculative.proposers import auto, parallel  # noqa: F401  (families that combine the others)
