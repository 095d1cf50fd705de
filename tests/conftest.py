import sys
from pathlib import Path

# Tests import helpers as `tests.<module>`; make the repo root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
