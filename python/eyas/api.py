"""The Python API: `eyas.load(...)` -> a Model with `.generate(...)`."""

from __future__ import annotations

import threading
from pathlib import Path

from eyas import generation
from eyas.generation import Generation, GenerationResult, TokenStream
from eyas.loaders import LoadedModel, load_model
from eyas.sampling import SamplingParams

DEFAULT_MAX_CONTEXT = 4096


def fail(msg: str) -> None:
    raise ValueError(f"[load] {msg}")


KV_DTYPES = ("f32", "f16")
# llama.cpp's default too: half the bytes per token of context, and as close to a float32 reference
# as the F32 cache on the default model (docs/kv_cache.md).
DEFAULT_KV_DTYPE = "f16"


def make_transformer(spec: dict, weights: dict, *, max_context: int, aux_layers: list[int],
                     kv_dtype: str = DEFAULT_KV_DTYPE):
    """The runtime target model; a module-level hook so tests can swap in the numpy reference."""
    from eyas import _core

    if not hasattr(_core, "Transformer"):
        raise RuntimeError("[load] this eyas build has no _core.Transformer (runtime not built)")
    try:
        model = _core.Transformer(spec, weights, max_context=max_context, aux_layers=aux_layers, kv_dtype=kv_dtype)
    except MemoryError:
        raise ValueError(f"[load] not enough memory for a KV cache of max_context={max_context} tokens; "
                         "load with a smaller max_context") from None
    if _core.get_default_device().backend == "cpu":
        _build_weight_packs(model)
    return model


def _build_weight_packs(model) -> None:
    """Runs a 2-row and a 1-row forward and forgets them, so the weight repacks the kernels read
    (built at a weight's first call; a Q8_0 head's at its second, docs/performance.md §3) exist
    before the first request: its prefill and its decode speed then show the steady state (the
    default model's first reply decoded 5-10 % slower without this)."""
    import numpy as np

    # Committed, then reset: a forward left uncommitted would make a recurrent layer allocate the working
    # copy of its state that plain decoding never needs (docs/model_spec.md).
    model.prefill(np.zeros(2, np.int32), logits="last")
    model.decode(0, logits="last")
    model.reset()


DEFAULT_DRAFTER_FAMILY = "eagle3"


def drafter_families() -> list[str]:
    """Accepted `drafter_family` values (the registered proposer families, then "none")."""
    try:
        from eyas.speculative import families
    except ImportError:  # no speculative engine in this build: plain decoding only
        return ["none"]
    return families()


def _make_proposer(family: str, drafter, loaded: LoadedModel):
    """None for plain decoding; otherwise the speculative engine's proposer (imported lazily).
    family: already checked against `drafter_families()`."""
    if family == "none" or drafter is None or (isinstance(drafter, str) and drafter.lower() == "none"):
        return None
    try:
        from eyas.speculative import make_proposer
    except ImportError:
        if drafter == "default":
            return None  # no speculative engine in this build: plain decoding
        raise ValueError(f"[load] drafter {drafter!r} needs the speculative engine (eyas.speculative), "
                         "which this build does not have; use drafter='none'") from None
    return make_proposer(family, drafter, loaded)


# Sampling for chat when the model recommends none (docs/server.md): greedy decoding of small chat
# models falls into repetition loops, and so does temperature 0.7 on the default model (eyas has no
# repetition penalty); the full distribution cut to its 0.9 nucleus answers sensibly.
CHAT_SAMPLING = {"temperature": 1.0, "top_p": 0.9, "top_k": 0}


class ModelBusy(RuntimeError):
    """A thread asked a model for a second generation while its own first one is still open."""


class SequenceLock:
    """One sequence at a time per model: its KV cache is a single sequence. Another thread waits its
    turn; the thread that holds it gets a clear error instead of a deadlock (an unfinished stream)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._owner: int | None = None

    def acquire(self) -> None:
        if self._owner == threading.get_ident():
            raise ModelBusy("[generate] this model is already generating: finish or close the open stream "
                            "first, or use Model.fork() for a second concurrent sequence")
        self._lock.acquire()
        self._owner = threading.get_ident()

    def release(self) -> None:
        self._owner = None
        self._lock.release()

    def hold(self, steps: TokenStream) -> TokenStream:
        """`steps` that takes the lock at its first step and gives it back when it ends or is closed."""

        def run():
            self.acquire()
            try:
                yield from steps
            finally:
                steps.close()
                self.release()

        return TokenStream(run(), steps.metrics)


class Model:
    """A loaded target model (and optional proposer: the drafter) ready to generate."""

    def __init__(self, loaded: LoadedModel, transformer, proposer, max_context: int, *,
                 kv_dtype: str = DEFAULT_KV_DTYPE):
        self.loaded = loaded
        self.transformer = transformer
        self.proposer = proposer  # an eyas.speculative.Proposer, or None for plain decoding
        self.max_context = max_context
        self.kv_dtype = kv_dtype
        self.lock = SequenceLock()

    def fork(self) -> "Model":
        """Another sequence over the same weights (zero-copy; the runtime may keep its own fused
        copies): its own KV cache, drafter state and lock, e.g. one per concurrent server request."""
        proposer = self.proposer.fork() if self.proposer is not None else None
        transformer = make_transformer(self.loaded.spec, self.loaded.weights, max_context=self.max_context,
                                       aux_layers=list(self.transformer.aux_layers), kv_dtype=self.kv_dtype)
        return Model(self.loaded, transformer, proposer, self.max_context, kv_dtype=self.kv_dtype)

    def recommended_sampling(self) -> dict:
        """temperature/top_p/top_k for chat: the model's own recommendation (generation_config.json,
        GGUF general.sampling.*) over `CHAT_SAMPLING`."""
        rec = dict(self.loaded.sampling)
        return rec if "temperature" in rec else {**CHAT_SAMPLING, **rec}

    @property
    def tokenizer(self):
        return self.loaded.tokenizer

    @property
    def spec(self) -> dict:
        return self.loaded.spec

    def encode_prompt(self, prompt, *, chat: bool = False) -> list[int]:
        """Prompt ids; with chat=True the model's chat template wraps a str or a message list."""
        if chat:
            if self.loaded.chat_template is None:
                raise ValueError("[generate] chat=True but the model has no chat template")
            return self.loaded.chat_template.encode(self.tokenizer, prompt)
        if not isinstance(prompt, str):
            raise ValueError("[generate] prompt must be a str (or use chat=True with a message list)")
        return self.tokenizer.encode(prompt)

    def generate(self, prompt, *, chat: bool = False, max_tokens: int = 256, temperature: float = 0.0,
                 top_p: float = 1.0, top_k: int = 0, seed: int | None = None, stop=None,
                 stream: bool = False, tree=None) -> GenerationResult | Generation:
        """Generate a continuation. stream=True returns an iterator of text pieces (`.result` at the end).
        One sequence at a time per model: from another thread this waits its turn (`SequenceLock`).

        tree: draft-tree policy for speculative decoding, a `TreePolicy` or a string such as
        "4,5,16" (top_k, depth, total nodes), "chain:3" or "auto:3" (0-3 drafted tokens per
        round, as deep as the measured acceptance and costs say pays); None = the drafter's
        recommendation, else "auto".
        """
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError(f"[generate] max_tokens must be an integer >= 1, got {max_tokens!r}")
        if isinstance(stop, str):
            stop = [stop]
        if stop is not None and not all(isinstance(s, str) for s in stop):
            raise ValueError("[generate] stop must be a str or a list of str")
        sampling = SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)
        ids = self.encode_prompt(prompt, chat=chat)  # stream() rejects an empty one
        if len(ids) + max_tokens > self.max_context:
            raise ValueError(f"[generate] prompt ({len(ids)} tokens) + max_tokens ({max_tokens}) exceeds "
                             f"max_context ({self.max_context}); shorten the prompt, lower max_tokens or "
                             "load with a larger max_context")
        steps = self.lock.hold(generation.stream(self.transformer, ids, sampling, proposer=self.proposer,
                                                 policy=tree))
        g = Generation(steps, self.tokenizer, num_prompt_tokens=len(ids), max_tokens=max_tokens, stop=stop)
        return g if stream else g.consume()


DEVICES = ("cpu", "metal")


def _use_device(device: str | None, threads: int | None) -> None:
    """Makes `device` (with `threads` CPU workers) the default device models and drafters run on."""
    from eyas import _core

    if device is not None and device not in DEVICES:
        fail(f"device must be one of {DEVICES}, got {device!r}")
    current = _core.get_default_device()
    if device is None and threads is None:
        return
    if device in (None, current.backend) and (threads is None or threads == current.num_threads):
        return
    try:
        _core.set_default_device(_core.Device(device or current.backend, threads or 0))
    except ValueError as e:
        fail(str(e))


def load(model: str | Path | None = None, *, drafter="default", drafter_family: str = DEFAULT_DRAFTER_FAMILY,
         threads: int | None = None, max_context: int = DEFAULT_MAX_CONTEXT, kv_dtype: str = DEFAULT_KV_DTYPE,
         device: str | None = None) -> Model:
    """Load a GGUF file or HF folder (default: the bundled SmolLM2-135M-Instruct Q4_1).

    drafter: a drafter checkpoint folder, "default" (the bundled drafter that fits the model; if none
    does, the "lookup" family: no drafter, copies of earlier text where they pay) or "none" (plain
    decoding). drafter_family: which proposer family reads it ("eagle3"), or "none" for plain decoding
    (`drafter_families()` lists the choices). The families that combine others, "auto" and
    "parallel", take "default" (each family's bundled drafter: eagle3 and hydra) or a {family:
    drafter} mapping naming the families (docs/speculative.md §11).

    kv_dtype: "f16" (default, as llama.cpp) or "f32": the precision of the KV cache. F16 reads half
    the bytes per token of context (decode 10-30% faster at a few hundred tokens of context on the
    reference CPU); on the default model its top-1 agreement with a float32 reference equals the F32
    cache's (docs/kv_cache.md). Greedy speculative output stays identical to plain output with either.

    device: "cpu" or "metal" (default: the current default device, "cpu" at start). Metal runs on
    Apple's GPU in macOS builds; elsewhere on the MSL emulator named by $EYAS_METAL_EMULATOR
    (docs/metal.md). The model and its drafter run there, and later loads default to it."""
    if drafter_family not in drafter_families():
        fail(f"unknown drafter_family {drafter_family!r}; choose one of {', '.join(drafter_families())}")
    if kv_dtype not in KV_DTYPES:
        fail(f"kv_dtype must be one of {KV_DTYPES}, got {kv_dtype!r}")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        fail(f"threads must be a positive integer, got {threads!r}")
    _use_device(device, threads)
    if not isinstance(max_context, int) or isinstance(max_context, bool) or not 2 <= max_context < 2**31:
        fail(f"max_context must be an integer in [2, 2**31), got {max_context!r}")
    if model is None:
        from eyas.models.default import default_model_path

        model = default_model_path()
    loaded = load_model(model)
    proposer = _make_proposer(drafter_family, drafter, loaded)
    aux_layers = list(proposer.aux_layers) if proposer is not None else []
    transformer = make_transformer(loaded.spec, loaded.weights, max_context=max_context, aux_layers=aux_layers,
                                   kv_dtype=kv_dtype)
    return Model(loaded, transformer, proposer, max_context, kv_dtype=kv_dtype)
