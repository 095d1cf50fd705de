# How often a cheaper scoring of the draft head keeps the exact head's best tokens among the rows it would
# rescore: a rank-r projection (the head's top singular directions) with M candidates, and symmetric 2-4-bit
# copies with M rescored rows. Reads head_states.py's file.
#   python docs/results/draft-head-scoring-2026-12-07/head_scoring.py
import numpy as np
z = np.load("/tmp/eyas_head_states.npz")
S, am, W = z["states"].astype(np.float64), z["argmax"], z["W"]
N, H = [int(x) for x in z["shape"]]
blk = W.reshape(N, H // 32, 34)
d = blk[:, :, :2].copy().view(np.float16).astype(np.float64)  # [N, nb, 1]
q = blk[:, :, 2:].view(np.int8).astype(np.float64)
Wd = (q * d).reshape(N, H)
norm, eps = z["norm"].astype(np.float64), float(z["eps"])
hn = S / np.sqrt((S ** 2).mean(1, keepdims=True) + eps) * norm
L = hn @ Wd.T
print("states", S.shape, "exact argmax == engine's:", (L.argmax(1) == am).mean())
order = np.argsort(-L, axis=1)
top1, top8 = order[:, :1], order[:, :8]
U, sv, Vt = np.linalg.svd(Wd, full_matrices=False)
for r in (32, 64, 96, 128):
    P = Vt[:r]                # [r, H]
    Hr = Wd @ P.T             # [N, r]  (stored in reduced precision would add error; f64 here)
    La = (hn @ P.T) @ Hr.T
    oa = np.argsort(-La, axis=1)
    for M in (64, 256, 512, 1024):
        cand = oa[:, :M]
        in1 = np.mean([top1[i, 0] in set(cand[i]) for i in range(len(S))])
        in8 = np.mean([len(set(top8[i]) & set(cand[i])) / 8 for i in range(len(S))])
        print(f"r={r:4d} M={M:5d}: exact top-1 in candidates {in1:.4f}, top-8 share {in8:.4f}")
print("--- low-bit scoring copies")
def qsym(Wd, bits, blockn=32):
    B = Wd.reshape(N, H // blockn, blockn)
    qmax = 2 ** (bits - 1)  # Q4_0-like: values in [-qmax, qmax-1], d = amax / -qmax of the signed max
    amax_idx = np.abs(B).argmax(2)
    mx = np.take_along_axis(B, amax_idx[..., None], 2)
    dd = mx / -qmax
    dd[dd == 0] = 1
    qq = np.clip(np.round(B / dd), -qmax, qmax - 1)
    return (qq * dd).reshape(N, H)
for bits, bn in ((4, 32), (3, 32), (3, 16), (2, 16), (2, 32)):
    La = hn @ qsym(Wd, bits, bn).T
    oa = np.argsort(-La, axis=1)
    for M in (32, 64, 128):
        cand = oa[:, :M]
        in1 = np.mean([top1[i, 0] in set(cand[i]) for i in range(len(S))])
        in8 = np.mean([len(set(top8[i]) & set(cand[i])) / 8 for i in range(len(S))])
        print(f"{bits}-bit blocks of {bn}: M={M:4d} top-1 in {in1:.4f}, top-8 share {in8:.4f}")
