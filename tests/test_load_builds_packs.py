"""eyas.load builds the weight repacks its decode and prefill read, so the first request's reported
speed is the steady state's (docs/performance.md §3)."""

import eyas
from eyas import _core, api


def test_a_loaded_model_builds_no_weight_pack_while_generating(monkeypatch):
    model = eyas.load(drafter="none")
    built = _core.ops._weight_packs_built()
    out = model.generate("Name three colors.", chat=True, max_tokens=8)
    assert len(out.tokens) > 1
    assert _core.ops._weight_packs_built() == built, "a repack was built during the first generation"
    # The warm-up forwards leave no trace: a model loaded without them answers with the same tokens.
    monkeypatch.setattr(api, "_build_weight_packs", lambda model: None)
    cold = eyas.load(drafter="none").generate("Name three colors.", chat=True, max_tokens=8)
    assert cold.tokens == out.tokens
