"""The half-precision KV cache (kv_dtype="f16"): writes round each value to nearest even exactly as
numpy's float16 does, commits move rows byte for byte, attention over an F16 cache gives the bits
of attention over an F32 cache holding the same values, and every invariant holds with it: plain
decode == verify of a chain or a tree, greedy speculative output == plain output."""

import numpy as np
import pytest

import eyas
from eyas import _core
from tests.parity.cases_attention import make_inputs
from tests.parity.cases_kv import kv_move_rows_ref
from tests.test_transformer_reference import make_model


def f16_bits(x):
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16)


@pytest.mark.parametrize("scalar", [False, True], ids=["simd", "scalar"])
def test_kv_write_rounds_like_numpy(scalar):
    edges = np.array([0.0, -0.0, 1e-8, 2.0**-25, 1.5 * 2.0**-24, 2.5 * 2.0**-24, 2.0**-14 * (1 - 2.0**-11),
                      6.1e-5, 1 / 3, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 65504, 65519.99, 65520, 1e6, -1e6,
                      np.inf, -np.inf], np.float32)
    rng = np.random.default_rng(0)
    wide = (rng.standard_normal(4096 - len(edges)) * np.exp(rng.uniform(-25, 12, 4096 - len(edges))))
    vals = np.concatenate([edges, wide.astype(np.float32)])  # ties, subnormals, overflow to inf
    new = vals.reshape(64, 1, 64)
    cache = np.zeros((1, 80, 64), np.float16)
    _core.ops._force_scalar(scalar)
    try:
        _core.ops.kv_write(new, cache, 7)
    finally:
        _core.ops._force_scalar(False)
    with np.errstate(over="ignore"):
        want = f16_bits(vals).reshape(64, 64)
    assert np.array_equal(cache[0, 7:71].view(np.uint16), want)
    assert not cache[0, :7].any() and not cache[0, 71:].any()


def test_kv_move_rows_on_a_half_cache():
    rng = np.random.default_rng(1)
    cache = rng.standard_normal((3, 40, 64)).astype(np.float16)
    for src, dst in [([12, 14, 17], 12), ([20, 5, 9], 6), ([30, 31], 29)]:
        src = np.array(src, np.int32)
        want = kv_move_rows_ref(cache, src, dst)
        _core.ops.kv_move_rows(cache, src, dst)
        assert np.array_equal(cache.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("level", [0, 1, 2], ids=["scalar", "simd-2nd", "simd-3rd"])
@pytest.mark.parametrize("kind", ["causal", "tree"])
def test_attention_over_half_cache_equals_f32_of_same_values(level, kind):
    levels = _core.ops._simd_levels()  # scalar, then the SIMD levels this CPU runs (the best one twice if short)
    rng = np.random.default_rng(2)
    _core.ops._cap_simd(levels[min(level, len(levels) - 1)])
    try:
        for d, hq, hkv, prefix, n in [(64, 9, 3, 37, 5), (128, 8, 2, 130, 17), (80, 3, 3, 0, 6), (64, 9, 3, 201, 32),
                                        (64, 9, 3, 300, 4), (128, 8, 2, 150, 3)]:  # few queries: tiles convert shared rows
            a = make_inputs(rng, n, hq, hkv, d, prefix, kind)
            k16, v16 = a["k"].astype(np.float16), a["v"].astype(np.float16)
            got = _core.ops.attention(a["q"], k16, v16, prefix, a["mask"])
            want = _core.ops.attention(a["q"], k16.astype(np.float32), v16.astype(np.float32), prefix, a["mask"])
            assert np.array_equal(got, want), f"d={d} prefix={prefix}"
    finally:
        _core.ops._force_scalar(False)


def test_attention_rejects_mixed_cache_types():
    rng = np.random.default_rng(3)
    a = make_inputs(rng, 2, 4, 2, 16, 3, "causal")
    with pytest.raises(ValueError, match=r"\[attention\].*v_cache"):
        _core.ops.attention(a["q"], a["k"].astype(np.float16), a["v"], 3)


def _tiny(kv_dtype):
    spec, core, _ = make_model(3, layers=3)
    return spec, _core.Transformer(spec, core, max_context=64, kv_dtype=kv_dtype)


def test_decode_equals_chain_and_tree_verify_with_a_half_cache():
    spec, m = _tiny("f16")
    rng = np.random.default_rng(4)
    prompt = rng.integers(0, spec["vocab_size"], 9).astype(np.int32)
    m.prefill(prompt)
    toks, logits, tok = [], [], int(prompt[-1])
    for _ in range(5):
        out = m.forward(np.array([tok], np.int32), logits="last")
        m.commit([0])
        logits.append(out["logits"][-1])
        tok = int(np.argmax(out["logits"][-1]))
        toks.append(tok)
    m.truncate(len(prompt))
    chain = np.array([int(prompt[-1])] + toks[:4], np.int32)
    got = m.forward(chain, mask=np.tril(np.ones((5, 5), np.uint8)), depths=np.arange(5, dtype=np.int32),
                    logits="all")["logits"]
    assert np.array_equal(got, np.array(logits))
    # A tree whose path 0 -> 2 -> 4 is the chain above, with siblings in between.
    tree = np.array([chain[0], 7, chain[1], 11, chain[2]], np.int32)
    parents = [-1, 0, 0, 1, 2]
    mask = np.eye(5, dtype=np.uint8)
    for i, p in enumerate(parents):
        if p >= 0:
            mask[i] |= mask[p]
    depths = np.array([0, 1, 1, 2, 2], np.int32)
    m.truncate(len(prompt))
    out = m.forward(tree, mask=mask, depths=depths, logits="all")["logits"]
    assert np.array_equal(out[[0, 2, 4]], np.array(logits[:3]))
    m.commit([0, 2, 4])  # the accepted path moves into place; decoding on gives decode's bits
    nxt = m.forward(np.array([chain[3]], np.int32), logits="last")["logits"][-1]
    assert np.array_equal(nxt, logits[3])


def test_half_cache_is_close_to_f32():
    spec, m16 = _tiny("f16")
    _, m32 = _tiny("f32")
    ids = np.random.default_rng(5).integers(0, spec["vocab_size"], 24).astype(np.int32)
    a = m32.forward(ids, logits="all")["logits"]
    b = m16.forward(ids, logits="all")["logits"]
    assert not np.array_equal(a, b)  # the cache really is half precision
    np.testing.assert_allclose(b, a, rtol=0, atol=2e-2 * np.abs(a).max())


def test_kv_dtype_is_validated():
    spec, core, _ = make_model(3, layers=2)
    assert _core.Transformer(spec, core, max_context=16).kv_dtype == "f32"
    assert _core.Transformer(spec, core, max_context=16, kv_dtype="f16").kv_dtype == "f16"
    with pytest.raises(ValueError, match="kv_dtype"):
        _core.Transformer(spec, core, max_context=16, kv_dtype="bf16")
    with pytest.raises(ValueError, match=r"\[load\] kv_dtype"):
        eyas.load(kv_dtype="int8")


def test_load_defaults_to_a_half_cache():
    # The product default (as llama.cpp's); the op-level Transformer keeps F32, the reference.
    from tests.fixtures.default_model import load_or_skip

    load_or_skip()
    assert eyas.load(drafter="none", max_context=64).transformer.kv_dtype == "f16"
    assert eyas.load(drafter="none", max_context=64, kv_dtype="f32").transformer.kv_dtype == "f32"


def test_greedy_speculative_equals_plain_with_a_half_cache():
    spec = eyas.load(drafter="default", kv_dtype="f16")
    plain = eyas.load(drafter="none", kv_dtype="f16")
    for prompt, tree in [("def fib(n):", "chain:3"), ("Name three colors.", "2,3,6")]:
        want = plain.generate(prompt, chat=True, max_tokens=40).tokens
        got = spec.generate(prompt, chat=True, max_tokens=40, tree=tree)
        assert got.tokens == want
        assert got.metrics["num_drafts"] > 0
