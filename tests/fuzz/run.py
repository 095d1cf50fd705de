"""Runs one fuzz target under atheris (coverage-guided, libFuzzer's engine):

    python -m tests.fuzz.run TARGET --seconds 8 --work DIR

The seed corpus `tests/fuzz/corpus/TARGET/` is copied into DIR (new inputs go there, never into
the repository); a crash or timeout leaves its input in DIR as crash-* / timeout-* and exits non-zero.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
PER_INPUT_TIMEOUT_S = 10  # a single input that runs longer is reported as a hang
MAX_INPUT_BYTES = 16384  # above the largest seed: room to grow, small enough to stay fast


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0, help="libFuzzer's seed; 0 picks a random one")
    args = ap.parse_args()

    with atheris.instrument_imports(include=["eyas"]):  # coverage feedback from eyas' Python code
        import eyas.chat  # noqa: F401
        import eyas.drafters.eagle3  # noqa: F401
        import eyas.loaders  # noqa: F401
        import eyas.models  # noqa: F401
        import eyas.sampling  # noqa: F401
        import eyas.server.protocol  # noqa: F401
        import eyas.speculative.policy  # noqa: F401
        import eyas.tokenizer  # noqa: F401
    from tests.fuzz.targets import TARGETS, expected_errors

    target, expected = TARGETS[args.target], expected_errors()

    def one_input(data: bytes) -> None:
        try:
            target(data)
        except expected:
            pass

    corpus = args.work / "corpus"
    shutil.copytree(HERE / "corpus" / args.target, corpus, dirs_exist_ok=True)
    atheris.Setup([sys.argv[0], str(corpus), f"-max_total_time={args.seconds}", f"-timeout={PER_INPUT_TIMEOUT_S}",
                   f"-max_len={MAX_INPUT_BYTES}", f"-artifact_prefix={args.work}/", "-rss_limit_mb=4096",
                   "-print_final_stats=1", f"-seed={args.seed}"], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
