"""How well the drafter's own probabilities predict acceptance: greedy generation with a fixed chain,
each drafted token's conditional draft probability binned against whether the target accepted it
(counted only where the token before it was accepted, as `acceptance_per_pos` counts).

    PYTHONPATH=build/dev/pkg python bench/draft_calibration.py --prompts bench/prompts/eval_chat.jsonl \
        bench/fixtures/e7_doc_summary.jsonl --limit 12 --chain 6
"""

import argparse

import numpy as np

BINS = np.linspace(0.0, 1.0, 11)


def calibrate(model, items: list[dict], chain: int, max_tokens: int) -> dict:
    """Greedy `chain:{chain}` generations of `items` (as `eyas.commands.bench.read_prompts` gives them):
    {"p": F64[n] conditional draft probability of each judged token, "accepted": bool[n], "first": bool[n]
    (the round's first drafted token), "rounds": drafted rounds, "accepted_tokens": their accepted tokens}."""
    proposer = model.proposer
    rounds, last = [], {}
    propose, observe = proposer.propose, proposer.observe

    def recording_propose(policy):
        tree = propose(policy)
        last["p"] = np.exp(np.diff(np.asarray(tree.scores, np.float64)))  # a chain: node j given node j - 1
        return tree

    def recording_observe(accepted, depth):
        rounds.append((last["p"], accepted))
        observe(accepted, depth)

    proposer.propose, proposer.observe = recording_propose, recording_observe
    try:
        for item in items:
            n = min(item.get("max_tokens") or max_tokens, max_tokens)
            model.generate(item["prompt"], chat=item["chat"], max_tokens=n, tree=f"chain:{chain}")
    finally:
        proposer.propose, proposer.observe = propose, observe
    p, ok, first = [], [], []
    for probs, accepted in rounds:
        for j, pj in enumerate(probs[: accepted + 1]):
            p.append(pj), ok.append(j < accepted), first.append(j == 0)
    return {"p": np.array(p), "accepted": np.array(ok, bool), "first": np.array(first, bool), "rounds": len(rounds),
            "accepted_tokens": sum(a for _, a in rounds)}


def table(c: dict) -> str:
    lines = ["draft probability | tokens | accepted | first tokens | accepted", "--- | --- | --- | --- | ---"]
    p, ok, first = c["p"], c["accepted"], c["first"]
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        b = (p >= lo) & ((p < hi) if hi < 1 else (p <= hi))
        bf = b & first
        rate = f"{ok[b].mean():.2f}" if b.any() else "-"
        rate_f = f"{ok[bf].mean():.2f}" if bf.any() else "-"
        lines.append(f"{lo:.1f}-{hi:.1f} | {b.sum()} | {rate} | {bf.sum()} | {rate_f}")
    return "\n".join(lines)


def main() -> None:
    import eyas
    from eyas.commands.bench import read_prompts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", nargs="+", required=True, help="jsonl prompt files (as `eyas bench`)")
    ap.add_argument("--model", default=None, help="GGUF or HF folder (default: the bundled model)")
    ap.add_argument("--drafter", default="default")
    ap.add_argument("--limit", type=int, default=12, help="prompts per file")
    ap.add_argument("--chain", type=int, default=6, help="drafted tokens per round")
    ap.add_argument("--max-tokens", type=int, default=192)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    model = eyas.load(a.model, drafter=a.drafter, threads=a.threads, max_context=4096)
    if model.proposer is None:
        raise SystemExit("no drafter fits this model")
    for path in a.prompts:
        c = calibrate(model, read_prompts(path, a.limit), a.chain, a.max_tokens)
        print(f"\n{path}: {c['rounds']} rounds, first drafted token accepted {c['accepted'][c['first']].mean():.2f}\n")
        print(table(c))


if __name__ == "__main__":
    main()
