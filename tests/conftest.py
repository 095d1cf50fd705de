import sys
from pathlib import Path

import pytest

# Tests import helpers as `tests.<module>`; make the repo root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@pytest.fixture
def restore_isa_and_threads():
    """Puts back the matmul path and thread count a test changes."""
    from eyas import _core

    isa, threads = _core.ops.get_isa(), _core.get_num_threads()
    yield
    _core.ops.set_isa(isa)
    _core.set_num_threads(threads)
