"""A drafter exported by eyas.train runs in the C++ engine exactly as in torch (CPU, tiny model)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="drafter training needs torch (pip install 'eyas[train]')")

from eyas import _core  # noqa: E402
from tests.test_train import _drafter, data, target, tiny_gguf  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.skipif(not hasattr(_core, "speculative") or not hasattr(_core.speculative, "Eagle3Drafter"),
                                reason="this build has no C++ EAGLE-3 drafter")


def test_exported_drafter_matches_core(tmp_path, tiny_gguf, target, data):  # noqa: F811
    from eyas.drafters.eagle3 import load_eagle3
    from eyas.loaders import load_model
    from eyas.train.export import save_drafter

    d = _drafter(target, data)
    with torch.no_grad():  # trained-looking weights: perturb norms so their placement matters
        for n in (d.hidden_norm, d.input_layernorm, d.post_attention_layernorm, d.norm):
            n.weight.mul_(torch.rand(n.weight.shape) + 0.5)
    save_drafter(d, tmp_path, "float32")
    lm = load_model(tiny_gguf)
    core_d = load_eagle3(tmp_path, lm.spec, lm.weights, "f32")
    ids = torch.as_tensor(data.seq(3), dtype=torch.long)
    with torch.no_grad():
        _, aux = target(ids[None])
        want = d.ttt(aux, ids[None], 1)[0][0]  # [T, Vd] step-0 logits
    T = ids.shape[0]
    rt = _core.speculative.Eagle3Drafter(core_d.spec, core_d.weights, core_d.d2t, max_context=64)
    for t in (T // 2, T - 1):  # ingest in two chunks: the C++ KV cache must continue correctly
        start = rt.length
        rt.ingest(aux[0, start:t].numpy().astype(np.float32), ids[start + 1:t + 1].numpy().astype(np.int32))
        np.testing.assert_allclose(np.asarray(rt.last_logits), want[t - 1].numpy(), rtol=1e-4, atol=1e-4)
