"""End-to-end benchmark: plain vs speculative decoding on bench/prompts/*.jsonl (same as `eyas bench`).

    python bench/bench_speculative.py --prompts bench/prompts/chat.jsonl --drafter default --max-tokens 128
"""

import sys

from eyas.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
