"""ops.attention_many (the batched forward's one attention dispatch for several sequences): every
call's output is the bits of the same call made alone, whatever the mix of decode rows and trees,
cache precisions, prefixes, head layouts, thread counts and SIMD levels; bad calls fail clearly."""

import numpy as np
import pytest
from eyas import _core

from tests.test_transformer_reference import random_tree


def call(rng, *, t, hq, hkv, d, prefix, f16=False, tree=False):
    """One call's arguments: t queries (a tree of t nodes, or causal rows) after `prefix` slots."""
    cap = prefix + t + 3
    k = rng.standard_normal((hkv, cap, d)).astype(np.float32)
    v = rng.standard_normal((hkv, cap, d)).astype(np.float32)
    if f16:
        k, v = k.astype(np.float16), v.astype(np.float16)
    mask = random_tree(rng, t)[2] if tree and t > 1 else None
    return dict(q=rng.standard_normal((t, hq, d)).astype(np.float32), k_cache=k, v_cache=v, prefix_len=prefix,
                mask=mask)


def mixed_calls(rng, f16):
    """A serving round's mix: decode rows, small trees, a 20-node tree (the F16 conversion path on
    AVX-512), long and empty prefixes, two head layouts."""
    shapes = [dict(t=1, prefix=40), dict(t=1, prefix=700), dict(t=4, prefix=90, tree=True), dict(t=1, prefix=0),
              dict(t=20, prefix=130, tree=True), dict(t=3, prefix=5), dict(t=1, prefix=300)]
    out = []
    for i, s in enumerate(shapes):
        heads = dict(hq=9, hkv=3, d=64) if i % 2 == 0 else dict(hq=8, hkv=8, d=32)
        out.append(call(rng, f16=f16, **heads, **s))
    return out


def alone(c, scale, dev):
    enc = _core.Encoder(dev)
    out = _core.ops.attention(c["q"], c["k_cache"], c["v_cache"], c["prefix_len"], c["mask"], scale=scale, encoder=enc)
    enc.commit()
    return out


@pytest.mark.parametrize("f16", [False, True])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_each_call_gets_its_bits_alone(f16, threads):
    rng = np.random.default_rng(5 + threads)
    dev = _core.Device("cpu", threads)
    levels = _core.ops._simd_levels()
    try:
        for level in levels:
            _core.ops._cap_simd(level)
            calls = mixed_calls(rng, f16)
            scale = 0.125
            enc = _core.Encoder(dev)
            got = _core.ops.attention_many(calls, scale, encoder=enc)
            enc.commit()
            assert len(got) == len(calls)
            for i, (c, g) in enumerate(zip(calls, got)):
                want = alone(c, scale, dev)
                assert np.array_equal(g.view(np.uint32), want.view(np.uint32)), f"{level}: call {i} differs from alone"
    finally:
        _core.ops._cap_simd(levels[-1])


def test_many_small_decodes_use_every_thread_and_agree():
    """Eight decode rows over short prefixes: each too small to split alone, together split across the
    threads; the result still equals the calls one by one."""
    rng = np.random.default_rng(9)
    calls = [call(rng, t=1, hq=9, hkv=3, d=64, prefix=int(p)) for p in rng.integers(20, 120, 8)]
    dev = _core.Device("cpu", 2)
    enc = _core.Encoder(dev)
    got = _core.ops.attention_many(calls, 0.125, encoder=enc)
    enc.commit()
    for c, g in zip(calls, got):
        assert np.array_equal(g, alone(c, 0.125, dev))


def test_bad_call_fails_clearly():
    rng = np.random.default_rng(1)
    good = call(rng, t=1, hq=4, hkv=2, d=32, prefix=4)
    bad = dict(good, prefix_len=good["k_cache"].shape[1])  # prefix + new slots past the capacity
    with pytest.raises(ValueError, match=r"\[attention_many\].*capacity"):
        _core.ops.attention_many([good, bad], 0.5)
    with pytest.raises(ValueError, match=r"\[attention_many\].*scale"):
        _core.ops.attention_many([good], float("nan"))
    assert _core.ops.attention_many([], 0.5) == []
