"""The default model on Device('metal') through the MSL emulator against the CPU: the same tokens,
plain and speculative, and what a token costs on the emulator. A benchmark-style check of the
whole Metal path at a real model size (too slow for CI: about 2 s per token on 2 cores).

    EYAS_METAL_EMULATOR=$(python -m tests.metal_emu.build) PYTHONPATH=build/NAME/pkg \\
        python bench/metal_emulator.py [--tokens 8] [--prompt "Say hello."]

Exit status 1 when any Metal output differs from the CPU's.
"""

from __future__ import annotations

import argparse
import sys
import time

import eyas


def run(device: str, drafter: str, prompt: str, tokens: int) -> tuple[list[int], float, dict]:
    model = eyas.load(device=device, drafter=drafter, threads=1)
    t0 = time.perf_counter()
    out = model.generate(prompt, chat=True, max_tokens=tokens)
    return list(out.tokens), time.perf_counter() - t0, out.metrics


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=8)
    p.add_argument("--prompt", default="Say hello.")
    args = p.parse_args()
    ok = True
    print(f"{'drafter':<9} {'device':<6} {'s total':>8} {'s/token':>8} {'tau':>5}  tokens")
    for drafter in ("none", "default"):
        want = None
        for device in ("cpu", "metal"):
            toks, secs, m = run(device, drafter, args.prompt, args.tokens)
            want = toks if want is None else want
            same = toks == want
            ok &= same
            tau = m.get("mean_accepted_length", 1.0)
            print(f"{drafter:<9} {device:<6} {secs:8.2f} {secs / max(len(toks), 1):8.3f} {tau:5.2f}  {toks}"
                  + ("" if same else "  <- differs from the CPU"))
    print("identical to the CPU" if ok else "DIFFERENT from the CPU")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
