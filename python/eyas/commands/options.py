"""Options several subcommands share (one definition of each flag)."""

from __future__ import annotations

from eyas.api import DEFAULT_DRAFTER_FAMILY, DEFAULT_KV_DTYPE, DEFAULT_MAX_CONTEXT, DEVICES, KV_DTYPES, drafter_families


def add_drafter_options(p) -> None:
    p.add_argument("--drafter", default="default",
                   help="drafter checkpoint folder, 'default' (the bundled drafter that fits the model; if none "
                        "does, copies of earlier text only: the 'lookup' family) or 'none' (plain decoding)")
    p.add_argument("--drafter-family", choices=drafter_families(), default=DEFAULT_DRAFTER_FAMILY,
                   help=f"which proposer reads the drafter (default: {DEFAULT_DRAFTER_FAMILY}; 'none': plain decoding; "
                        "'auto'/'parallel': the bundled drafters of several families, one per round chosen "
                        "from acceptance / all merged into one tree; 'lookup': no drafter, copies of earlier text)")


def add_model_options(p) -> None:
    """The model, drafter, tree and runtime flags of every command that loads a model."""
    p.add_argument("--model", default=None, help="GGUF file or Hugging Face folder (default: bundled SmolLM2-135M)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the model runs: cpu (default) or metal (Apple GPU; off macOS the MSL emulator named "
                        "by EYAS_METAL_EMULATOR, docs/metal.md)")
    p.add_argument("--max-context", type=int, default=DEFAULT_MAX_CONTEXT)
    p.add_argument("--kv-dtype", choices=KV_DTYPES, default=DEFAULT_KV_DTYPE,
                   help="KV cache precision: f16 (default, as llama.cpp: half the bytes per token of context) "
                        "or f32")
    add_drafter_options(p)
    p.add_argument("--tree", default=None,
                   help="draft tree 'TOP_K,DEPTH,TOTAL', 'chain:DEPTH' or 'auto[:MAX_DEPTH][:nolookup]' (default: "
                        "the drafter's recommendation, else auto: a chain of 0-7 tokens per round, as deep as pays, "
                        "from the drafter or copied from earlier text; ':nolookup' drafts from the drafter alone); "
                        "'@P' after any of them drops drafted tokens whose draft probability is under P (e.g. auto@0.3)")


def load_model(args):
    """eyas.load with the flags `add_model_options` defined."""
    import eyas

    return eyas.load(args.model, drafter=args.drafter, drafter_family=args.drafter_family, threads=args.threads,
                     max_context=args.max_context, kv_dtype=args.kv_dtype, device=args.device)


def add_sampling_options(p, *, temperature_help: str) -> None:
    p.add_argument("--temperature", type=float, default=None, help=temperature_help)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--top-k", type=int, default=None, help="0 = no limit")
    p.add_argument("--seed", type=int, default=None)


def sampling_from(args, defaults: dict) -> dict:
    """temperature/top_p/top_k/seed: the flags given, else `defaults`."""
    out = {"temperature": 0.0, "top_p": 1.0, "top_k": 0, **defaults}
    for name in ("temperature", "top_p", "top_k"):
        if getattr(args, name) is not None:
            out[name] = getattr(args, name)
    out["seed"] = args.seed
    return out
