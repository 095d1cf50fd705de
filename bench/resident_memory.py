"""Resident memory of a loaded model against the kernels issue's bound, 1.1 x (files + sequence state).

    PYTHONPATH=build/<name>/pkg python bench/resident_memory.py [--model PATH ...] [--drafter none|default]

Growth of the process's resident set (VmRSS) from before `eyas.load` to after a short generation (F16 KV;
--drafter none: plain decoding, default: the engine's default proposer for the model). The sequence state
is the KV cache at --max-context plus one copy of any recurrent layer's state (`Transformer.state_bytes` at
length 0); the files are the model's and, with a drafter, the drafter checkpoint's (its folder's weight files).
Each model runs in its own process, so one's pages do not count towards the next.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


# Repeats itself, so that a drafter proposes (the lookup family copies earlier text) and verifies run.
PROMPT = "one two three four five six seven eight nine ten, one two three four five six seven eight nine ten, one two"


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    raise RuntimeError("no VmRSS in /proc/self/status")


def drafter_file_bytes(proposer) -> int:
    """Bytes of the drafter checkpoint's weight files (0: no drafter, or one with no files of its own)."""
    folder = getattr(getattr(proposer, "drafter", None), "path", None)
    if not folder or not os.path.isdir(folder):
        return 0
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if f.endswith((".safetensors", ".bin", ".gguf")))


def measure(model: str | None, max_context: int, tokens: int, drafter: str) -> dict:
    """Runs in the child: loads, generates, reports MB."""
    import eyas
    from eyas.models.default import default_model_path

    path = model or str(default_model_path())
    before = rss_mb()
    m = eyas.load(path, drafter=drafter, max_context=max_context)
    m.generate(PROMPT, max_tokens=tokens)
    after = rss_mb()
    t, spec = m.transformer, m.spec
    kv_layers = sum(1 for k in t.layer_kinds if k == "attention")
    kv = kv_layers * max_context * 2 * spec["num_kv_heads"] * spec["head_dim"] * 2  # K and V rows, F16
    t.reset()
    recurrent = t.state_bytes  # at length 0 only fixed-size (recurrent) states hold bytes
    return {
        "model": os.path.basename(path),
        "file_mb": (os.path.getsize(path) + drafter_file_bytes(m.proposer)) / 2**20,
        "kv_mb": kv / 2**20,
        "state_mb": recurrent / 2**20,
        "growth_mb": after - before,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", default=None, help="GGUF file (repeatable; default: the default model)")
    ap.add_argument("--max-context", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=32, help="tokens generated after the prompt")
    ap.add_argument("--drafter", default="none", help="as eyas.load takes it: none (plain decoding), default, ...")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child is not None:
        print(json.dumps(measure(a.child or None, a.max_context, a.tokens, a.drafter)))
        return
    print("| model | file MiB | KV cache MiB | recurrent state MiB | bound MiB | growth MiB | within |")
    print("|---|---|---|---|---|---|---|")
    for model in a.model or [""]:
        cmd = [sys.executable, __file__, "--child", model, "--max-context", str(a.max_context), "--tokens",
               str(a.tokens), "--drafter", a.drafter]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        bound = 1.1 * (r["file_mb"] + r["kv_mb"] + r["state_mb"])
        print(f"| {r['model']} | {r['file_mb']:.0f} | {r['kv_mb']:.0f} | {r['state_mb']:.0f} | {bound:.1f} | "
              f"{r['growth_mb']:.1f} | {'yes' if r['growth_mb'] <= bound else 'no'} |")


if __name__ == "__main__":
    main()
