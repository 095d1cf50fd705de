"""`eyas generate --tree/--drafter`: the bundled drafter is the default and never changes greedy text."""

import json
import subprocess
import sys

import pytest

from tests.fixtures import default_model


def _generate(*args):
    return subprocess.run([sys.executable, "-m", "eyas.cli", "generate", *args], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def _has_default_model():
    default_model.load_or_skip()


@pytest.mark.slow
def test_tree_shapes_give_plain_greedy_text(_has_default_model):
    prompt = ["Write a Python function that adds two numbers.", "--chat", "--max-tokens", "24", "--json",
              "--threads", "1"]
    plain = json.loads(_generate(*prompt, "--drafter", "none").stdout)
    for tree in (None, "chain:2", "3,3,8"):
        extra = [] if tree is None else ["--tree", tree]
        out = json.loads(_generate(*prompt, *extra).stdout)
        assert out["tokens"] == plain["tokens"], tree
        assert out["metrics"]["num_drafts"] > 0  # speculative by default


def test_bad_tree_is_a_clear_error(_has_default_model):
    r = _generate("hi", "--tree", "bad", "--max-tokens", "2")
    assert r.returncode != 0
    assert "tree policy 'bad'" in r.stderr
    assert "Traceback" not in r.stderr
