"""The whole engine on Device('metal') (emulator driver, real C++ host) against the CPU backend,
bit for bit: every tiny architecture (dense, MoE with host-step routing, Qwen3.5 hybrids whose
Gated DeltaNet layers run as host steps), float and quantized weights, F32 and F16 KV caches;
chunked prefill, decode (logits and argmax), tree verify with captured aux states, a commit that
moves KV rows, rollback and re-forward; then greedy speculative decoding against plain decoding."""

import numpy as np
import pytest

from eyas import _core
from eyas.loaders import load_model
from tests.fixtures import tiny_models, tiny_qwen35
from tests.metal_emu import cases as mc
from tests.metal_emu.fixtures import emulator, metal_device  # noqa: F401 (pytest fixtures)

# (variant, weight types): llama covers every weight type the quantizer writes at these sizes.
DENSE = [("llama", ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0")), ("llama3_rope_tied", ("Q8_0",)),
         ("qwen2", ("Q4_0",)), ("qwen3", ("F16",)), ("qwen3_moe", ("Q8_0",)), ("qwen2_moe_shared", ("F32",))]
HYBRID = [("dense", "F32"), ("moe", "Q8_0")]
CASES = [(v, q) for v, qs in DENSE for q in qs] + [(f"qwen35-{v}", q) for v, q in HYBRID]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("metal_models")
    out = {}
    for variant, qtypes in DENSE:
        built = tiny_models.build(variant, root, qtypes)
        out.update({(variant, q): built[q] for q in qtypes})
    for variant, qtype in HYBRID:
        model = tiny_qwen35.make_hf(variant, root / f"q35-{variant}")
        out[(f"qwen35-{variant}", qtype)] = tiny_qwen35.write_gguf(root / f"q35-{variant}.gguf", model, qtype)
    return out


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


def trace(model) -> list:
    """Every output of a fixed sequence of engine calls that touches each kernel and state path."""
    out = []
    model.prefill_checkpoints = True  # so the truncate below returns to the first prefill's end (recurrent layers)
    r = model.forward(np.arange(3, 14, dtype=np.int32), logits="all", capture_aux=True)
    out += [r["logits"], r["aux"]]
    model.commit(list(range(11)))
    for t in (20, 21, 22):
        out.append(model.decode(t)["logits"])
    out.append(model.decode(23, logits="argmax")["argmax"])
    # A tree: 0 -> {1, 2}, 1 -> 3, 2 -> 4; keep the path 0, 2, 4 (a commit that moves KV rows).
    r = model.forward(np.array([30, 31, 32, 33, 34], np.int32), parents=np.array([-1, 0, 0, 1, 2], np.int32),
                      logits="all", capture_aux=True)
    out += [r["logits"], r["aux"]]
    model.commit([0, 2, 4])
    out.append(model.decode(40)["logits"])
    keep = model.truncatable(model.length - 3)
    model.truncate(keep)
    r = model.forward(np.array([50, 51, 52], np.int32), logits="all")
    out.append(r["logits"])
    model.commit([0, 1, 2])
    out.append(model.decode(53)["logits"])
    # Several rows committed as they run: recurrent layers update their state in place.
    out.append(model.prefill(np.array([60, 61, 62, 63], np.int32), logits="all")["logits"])
    out.append(model.decode(64)["logits"])
    return out


@pytest.mark.parametrize("kv_dtype", ["f32", "f16"])
@pytest.mark.parametrize("variant,qtype", CASES, ids=[f"{v}-{q}" for v, q in CASES])
def test_metal_forward_equals_cpu_bit_for_bit(metal_device, files, variant, qtype, kv_dtype):
    loaded = load_model(files[(variant, qtype)])
    traces = []
    for device in (_core.Device("cpu", 1), metal_device):
        model = _core.Transformer(loaded.spec, loaded.weights, max_context=64, device=device, chunk=5,
                                  kv_dtype=kv_dtype)
        traces.append(trace(model))
    cpu, metal = traces
    assert len(cpu) == len(metal)
    for i, (c, m) in enumerate(zip(cpu, metal)):
        assert np.array_equal(_bits(c), _bits(m)), f"output {i} differs between Metal and the CPU"


def test_metal_speculative_greedy_equals_plain_and_cpu(metal_device):
    """Random drafter (few acceptances) and an always-right drafter (full acceptance, so commits
    of long paths): speculative = plain greedy on Metal, and Metal's tokens = the CPU's."""
    from eyas.generation import plain_steps
    from eyas.sampling import SamplingParams
    from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
    from tests.parity.cases_speculative import build, random_checkpoint
    from tests.test_speculative_greedy import AUX, check_equal, make_target, take

    spec, core = make_target()
    prompts = [[1, 2, 3, 4], [7, 7, 9, 30, 31]]
    plain = {}
    for device in (_core.Device("cpu", 1), metal_device):
        with mc.on_device(device):
            target = _core.Transformer(spec, core, max_context=64, aux_layers=AUX)
            plain[device.backend] = [take(plain_steps(target, p, SamplingParams()), 12) for p in prompts]
    assert plain["cpu"] == plain["metal"]
    with mc.on_device(metal_device):
        cfg, t = random_checkpoint(1, spec, draft_vocab=48)
        check_equal(spec, core, build(spec, core, cfg, t), prompts, [TreePolicy.chain(3), TreePolicy(2, 3, 6)], 12)
        # Every logit 0 (zero final norm): argmax is 0 whatever the input; a drafter proposing 0 is always right.
        H = spec["hidden_size"]
        core["output_norm"] = (np.zeros(H, np.float32), 0, [H])
        cfg, t = random_checkpoint(2, spec)
        t["lm_head.weight"][:] = 0.0
        t["d2t"][:] = 0
        target = _core.Transformer(spec, core, max_context=64, aux_layers=AUX)
        gen = SpeculativeGenerator(target, Eagle3Proposer(build(spec, core, cfg, t)), TreePolicy(1, 3, 8))
        assert take(gen.steps([1, 2, 3], SamplingParams()), 13) == [0] * 13
        assert gen.metrics()["mean_accepted_length"] == 4


def test_hydra_drafter_on_metal_equals_cpu(metal_device):
    """Hydra heads (prefix attention + sequential heads) draft the CPU's tree, logits bit for bit."""
    from tests.test_hydra_drafter import _drafter, _make

    weights, d2t = _make(True)
    rng = np.random.default_rng(2)
    setup = (weights, d2t)
    hidden = (2.0 * rng.standard_normal((6, 64))).astype(np.float32)
    tokens = rng.integers(0, 300, 6).astype(np.int32)
    out = {}
    for device in (_core.Device("cpu", 1), metal_device):
        with mc.on_device(device):
            d = _drafter(setup)
            d.ingest(hidden, tokens)
            tree = d.expand(3, 3, 12)
            out[device.backend] = (d.last_logits.copy(), tree)
    assert np.array_equal(_bits(out["cpu"][0]), _bits(out["metal"][0]))
    for k in ("tokens", "parents", "scores"):
        assert np.array_equal(_bits(out["cpu"][1][k]), _bits(out["metal"][1][k])), k


@pytest.mark.parametrize("variant,qtype", [("llama", "Q4_0"), ("qwen2", "Q4_0"), ("qwen3", "F16"),
                                           ("qwen3_moe", "Q8_0"), ("qwen2_moe_shared", "F32"),
                                           ("qwen35-dense", "F32"), ("qwen35-moe", "Q8_0")])
def test_speculative_on_metal_every_architecture(metal_device, files, variant, qtype):
    """Greedy speculative decoding with a random EAGLE-3 drafter on Metal: the CPU's plain tokens."""
    from eyas.generation import plain_steps
    from eyas.sampling import SamplingParams
    from eyas.speculative import Eagle3Proposer, SpeculativeGenerator, TreePolicy
    from tests.parity.cases_speculative import build, random_checkpoint
    from tests.test_speculative_greedy import take

    loaded = load_model(files[(variant, qtype)])
    prompt = [5, 9, 17, 33, 65, 129]
    with mc.on_device(_core.Device("cpu", 1)):
        want = take(plain_steps(_core.Transformer(loaded.spec, loaded.weights, max_context=64), prompt,
                                SamplingParams()), 10)
    with mc.on_device(metal_device):
        cfg, t = random_checkpoint(1, loaded.spec)
        drafter = build(loaded.spec, loaded.weights, cfg, t)
        target = _core.Transformer(loaded.spec, loaded.weights, max_context=64, aux_layers=drafter.aux_layers)
        for policy in (TreePolicy.chain(2), TreePolicy(2, 2, 5)):
            gen = SpeculativeGenerator(target, Eagle3Proposer(drafter), policy)
            assert take(gen.steps(prompt, SamplingParams()), 10) == want, policy
            assert gen.metrics()["num_draft_tokens"] > 0


def test_forward_batch_on_metal_equals_cpu(metal_device, files):
    """Continuous batching (the server's forward_batch) on Metal: each sequence gets the CPU's bits."""
    from tests.test_forward_batch import mixed_round

    loaded = load_model(files[("qwen3", "F16")])
    outs = {}
    for device in (_core.Device("cpu", 1), metal_device):
        seqs = [_core.Transformer(loaded.spec, loaded.weights, max_context=64, device=device, aux_layers=[0, 1, 2])
                for _ in range(3)]
        for t, p in zip(seqs, ([1, 2, 3], [4, 5], [6, 7, 8, 9])):
            t.prefill(np.array(p, np.int32))
        rng = np.random.default_rng(4)
        got = []
        for step in range(3):
            items = [mixed_round(rng, 300, i + step) for i in range(3)]
            res = seqs[0].forward_batch([dict(it, target=t) for it, t in zip(items, seqs)])
            got += [r[k] for r in res for k in sorted(r)]
            for t, it in zip(seqs, items):
                t.commit([0])
        outs[device.backend] = got
    assert len(outs["cpu"]) == len(outs["metal"])
    for i, (c, m) in enumerate(zip(outs["cpu"], outs["metal"])):
        assert np.array_equal(_bits(c), _bits(m)), f"output {i} differs between Metal and the CPU"
