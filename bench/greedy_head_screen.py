"""Could greedy decoding read half of a Q8_0 output head? A study of exact argmax screening.

Idea (docs/performance.md §9): split each stored quant q = 16 hi + lo (hi in -8..7, lo in 0..15), take
every row's logit from the hi nibbles alone, bound what the lo nibbles can add, and compute exact
logits only for the rows whose bound reaches the best lower bound. The argmax stays exact if the
bound is rigorous, and a step would read ~15 MB of the default model's 30 MB head instead of all of it.

This script measures how many rows survive such a screen on real hidden states: the final residual
stream of the default model's own replies (teacher-forced), normalised, quantized per 32 as the
engine's activations are. Two rigorous bounds per row: the worst case over the lo nibbles (7.5 x
sum |qx| per block) and Cauchy-Schwarz over the whole row. A screen pays only if few rows survive.

    PYTHONPATH=build/dev/pkg python bench/greedy_head_screen.py [--per-file 3] [--tokens 128]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

FILES = ["bench/prompts/eval_chat.jsonl", "bench/fixtures/e7_doc_summary.jsonl",
         "bench/fixtures/e7_code_generation.jsonl", "bench/fixtures/e7_raw_code.jsonl"]


def final_states(per_file: int, tokens: int) -> np.ndarray:
    """F32[N, H]: the residual stream after the last layer, at every generated position."""
    import eyas
    from eyas import api

    make = api.make_transformer

    def capture_last(spec, weights, **kw):  # the last "aux layer" is the output norm's input
        return make(spec, weights, **{**kw, "aux_layers": [spec["num_layers"]]})

    api.make_transformer = capture_last
    try:
        model = eyas.load(drafter="none")
    finally:
        api.make_transformer = make
    states = []
    for name in FILES:
        for line in Path(name).read_text().splitlines()[:per_file]:
            row = json.loads(line)
            chat = row.get("chat", False)
            reply = model.generate(row["prompt"], chat=chat, max_tokens=tokens).tokens
            ids = np.array(model.encode_prompt(row["prompt"], chat=chat) + list(reply), np.int32)
            model.transformer.reset()
            aux = np.asarray(model.transformer.forward(ids, logits="none", capture_aux=True)["aux"])
            model.transformer.reset()
            states.append(aux[len(ids) - len(reply):])
    return np.concatenate(states)


def q8_0_head():
    """(scales F32[V, nb], quants I32[V, nb, 32], output norm F32[H], eps) of the default model."""
    import gguf

    from eyas.models.default import default_model_path

    reader = gguf.GGUFReader(str(default_model_path()))
    tensors = {t.name: t for t in reader.tensors}
    head = tensors.get("output.weight", tensors["token_embd.weight"])
    if head.tensor_type.name != "Q8_0":
        raise SystemExit(f"the head is {head.tensor_type.name}; this study covers Q8_0")
    V, H = int(head.shape[1]), int(head.shape[0])
    blocks = np.asarray(head.data).reshape(V, H // 32, 34)
    d = blocks[:, :, :2].copy().view(np.float16)[..., 0].astype(np.float64)
    q = blocks[:, :, 2:].copy().view(np.int8).astype(np.int32)
    eps = float(reader.fields["llama.attention.layer_norm_rms_epsilon"].parts[-1][0])
    return d, q, np.asarray(tensors["output_norm.weight"].data, np.float64), eps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-file", type=int, default=3, help="prompts from each file")
    ap.add_argument("--tokens", type=int, default=128, help="reply tokens per prompt")
    a = ap.parse_args()
    d, q, norm, eps = q8_0_head()
    hi, lo = q >> 4, q & 15  # q = 16 hi + lo exactly
    # Cauchy-Schwarz factor of each row: the lo nibbles' distance from their midpoint, scaled per block
    row_cs = np.sqrt((d ** 2 * ((lo - 7.5) ** 2).sum(2)).sum(1))
    worst, cs = [], []
    for x in final_states(a.per_file, a.tokens).astype(np.float64):
        xb = (x / np.sqrt(np.mean(x * x) + eps) * norm).reshape(d.shape[1], 32)
        dx = np.abs(xb).max(1) / 127.0
        qx = np.round(xb / np.where(dx > 0, dx, 1.0)[:, None]).astype(np.int32)  # [nb, 32]
        s = d * dx[None, :]  # [V, nb]
        exact = (s * np.einsum("vbk,bk->vb", q, qx)).sum(1)
        approx = (s * (16 * np.einsum("vbk,bk->vb", hi, qx) + 7.5 * qx.sum(1))).sum(1)
        slack = 1e-3  # float rounding of the sums above, far below either bound
        bounds = {"worst": (np.abs(s) * 7.5 * np.abs(qx).sum(1)).sum(1) + slack,
                  "cs": row_cs * np.sqrt((dx ** 2 * (qx.astype(np.float64) ** 2).sum(1)).sum()) + slack}
        for name, err, out in (("worst", bounds["worst"], worst), ("cs", bounds["cs"], cs)):
            assert np.all(np.abs(exact - approx) <= err), name
            survivors = approx + err >= (approx - err).max()
            assert survivors[exact.argmax()]
            out.append(int(survivors.sum()))
    V = d.shape[0]
    for name, counts in (("worst case over lo", worst), ("Cauchy-Schwarz", cs)):
        c = np.array(counts)
        print(f"{name:20s} positions {len(c)}: rows left of {V}: median {np.median(c):.0f}, "
              f"p10 {np.percentile(c, 10):.0f}, min {c.min()}")


if __name__ == "__main__":
    main()
