"""Writes the committed seed corpus (tests/fuzz/corpus/<target>/): small valid inputs the fuzzer mutates.

    python -m tests.fuzz.make_seeds
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.fixtures import tiny_models, tiny_tokenizer
from tests.hostile import safetensors_bytes as sb

CORPUS = Path(__file__).resolve().parent / "corpus"
# A model small enough that the whole file is a fuzz input: one layer, hidden 8, the tiny tokenizer.
SMALL = dict(tiny_models.BASE, vocab_size=tiny_models.VOCAB, hidden_size=8, num_attention_heads=2, num_key_value_heads=1,
             head_dim=4, num_hidden_layers=1, intermediate_size=8, rope_parameters={"rope_theta": 10000.0})


def small_tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    V, H, I = SMALL["vocab_size"], SMALL["hidden_size"], SMALL["intermediate_size"]
    q, kv = SMALL["num_attention_heads"] * SMALL["head_dim"], SMALL["num_key_value_heads"] * SMALL["head_dim"]
    shapes = {"token_embd.weight": (V, H), "output_norm.weight": (H,), "blk.0.attn_norm.weight": (H,),
              "blk.0.ffn_norm.weight": (H,), "blk.0.attn_q.weight": (q, H), "blk.0.attn_k.weight": (kv, H),
              "blk.0.attn_v.weight": (kv, H), "blk.0.attn_output.weight": (H, q), "blk.0.ffn_gate.weight": (I, H),
              "blk.0.ffn_up.weight": (I, H), "blk.0.ffn_down.weight": (H, I)}
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def write(target: str, name: str, data: bytes | str) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)


def main() -> None:
    tmp = CORPUS.parent / "_seed_tmp.gguf"
    tiny_models.write_gguf(tmp, "llama", small_tensors(), SMALL, "F16")
    write("gguf", "small_llama_f16.gguf", tmp.read_bytes())
    tmp.unlink()

    header, data = sb.header_of({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, np.float32)})
    write("safetensors", "two_tensors.safetensors", sb.to_bytes(header, data))
    header["__metadata__"] = {"format": "pt"}
    header["c"] = {"dtype": "BF16", "shape": [2], "data_offsets": [len(data), len(data) + 4]}
    write("safetensors", "metadata_bf16.safetensors", sb.to_bytes(header, data + b"\x80\x3f\x00\x40"))

    write("model_config", "llama.json", json.dumps({**SMALL, "model_type": "llama", "rope_theta": 10000.0}))
    write("model_config", "qwen3_moe.json", json.dumps({**SMALL, **tiny_models.MOE, "model_type": "qwen3_moe",
                                                        "mlp_only_layers": [0], "norm_topk_prob": True}))
    write("model_config", "llama3_rope.json", json.dumps({**SMALL, "model_type": "llama",
                                                          "rope_scaling": tiny_models.LLAMA3_ROPE}))

    drafter = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64, "intermediate_size": 96,
               "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1, "vocab_size": 300,
               "draft_vocab_size": 40, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "target_hidden_size": 64,
               "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3], "use_aux_hidden_state": True}}
    write("drafter_config", "specforge.json", json.dumps(drafter))
    layer = {k: drafter[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                                     "num_hidden_layers", "vocab_size", "rms_norm_eps", "rope_theta")}
    write("drafter_config", "speculators.json", json.dumps({
        "architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "transformer_layer_config": layer,
        "draft_vocab_size": 40, "eagle_aux_hidden_state_layer_ids": [2, 3, 4]}))

    write("chat_template", "chatml.txt", tiny_tokenizer.CHAT_TEMPLATE.replace("\n", "\\n") + "\nHello there")
    write("chat_template", "loops.txt",
          "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ bos_token ~ m.role"
          " | upper ~ ':' ~ m.content | tojson }}{% if loop.last %}{{ ns.n * 2 }}{% endif %}{% endfor %}"
          "{{ raise_exception('x') if messages | length > 9 }}\ncontent")

    for i, seed in enumerate([b"4,5,16" + bytes(range(64)), b"chain:3" + b"\xff" * 40, b"auto:2" + b"\x00" * 80]):
        write("sampling_and_tree", f"seed{i}.bin", seed)

    write("http_body", "chat.json", json.dumps({
        "model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0.7, "top_p": 0.9, "top_k": 20, "max_tokens": 16, "stop": ["\n", "END"], "seed": 3,
        "stream": True, "stream_options": {"include_usage": True}}))
    write("http_body", "completion.json", json.dumps({"prompt": [1, 2, 3], "logprobs": 2, "echo": True,
                                                      "max_tokens": 4, "ignore_eos": True}))
    write("http_body", "parts.json", json.dumps({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}], "logprobs": True, "top_logprobs": 3}))


if __name__ == "__main__":
    main()
