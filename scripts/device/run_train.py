"""Run `eyas.train` from a source checkout without the compiled core (GPU machine / CI helpers).

The training code never needs `eyas._core`; when it is not built, a stub module stands in so that
`import eyas` (whose __init__ imports the core) still succeeds.
"""
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
try:
    import eyas._core  # noqa: F401
except ImportError:
    sys.modules["eyas._core"] = types.ModuleType("eyas._core")

from eyas.train.cli import main  # noqa: E402

main(sys.argv[1:])
