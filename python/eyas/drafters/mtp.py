"""The target's own multi-token-prediction (MTP) block as a drafter: Qwen3.5 / Qwen3-Next checkpoints carry
it as HF `mtp.*` tensors or GGUF `blk.{L}.nextn.*` blocks, which the loaders keep as block L = num_layers
(spec["mtp_layers"], docs/model_spec.md). Here: the tensors the C++ MtpDrafter reads, and a clear error
for a model without them."""

from __future__ import annotations

import dataclasses

from eyas.drafters.checkpoint import fail


@dataclasses.dataclass
class MtpHead:
    """The MTP block of a loaded target, ready for the C++ MtpDrafter."""

    spec: dict  # the target's
    weights: dict  # blk.{block}.* plus the target's token_embd, output_norm and output
    block: int  # = the target's num_layers
    ffn: str  # the block's FFN kind
    _runtimes: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def hidden_layer(self) -> int:
        """The target's aux id whose capture the block reads: its final residual (input of layer L)."""
        return self.spec["num_layers"]

    def runtime(self, capacity: int):
        """The C++ drafter with a KV cache of `capacity` committed positions (cached per capacity)."""
        if capacity not in self._runtimes:
            from eyas import _core

            self._runtimes[capacity] = _core.speculative.MtpDrafter(self.spec, self.weights, block=self.block,
                                                                    ffn=self.ffn, max_context=capacity)
        return self._runtimes[capacity]


def mtp_head(spec: dict, weights: dict, name: str = "the model") -> MtpHead:
    """The first MTP block of a target (with several, it drafts every depth: all Qwen3.5 / Qwen3-Next
    releases have one). name: how the error message calls the model."""
    layers = spec.get("mtp_layers") or []
    if not layers:
        fail(f"{name} has no multi-token-prediction (MTP) layers (HF mtp.* tensors or GGUF nextn blocks), "
             "so drafter family 'mtp' cannot draft for it; use an EAGLE-3 drafter (family 'eagle3') or 'none'")
    block = spec["num_layers"]
    own = f"blk.{block}."
    shared = ("token_embd", "output_norm", "output")
    picked = {k: v for k, v in weights.items() if k.startswith(own) or k in shared}
    return MtpHead(spec, picked, block, layers[0]["ffn"])
