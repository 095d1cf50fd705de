# The bundled drafter's layer (fc, q|k|v, o, gate|up, down) requantized to Q4_0 in place, for A/Bs (not adopted).
import numpy as np
from eyas import _core
from eyas.drafters import eagle3
LAYER = ("fc", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
def to_q4(model):
    d = model.proposer.drafter
    for k in LAYER:
        raw, dt, shape = d.weights[k]
        d.weights[k] = (_core.ops.requantize_q4_0(raw, dt, shape), 2, list(shape))
    eagle3.stack_fused_parts(d.weights)
    d._runtimes.clear()
