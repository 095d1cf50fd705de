# Tiny numpy and Python operations timed warm and right after a 64 MB read (as after a target forward).
import time, numpy as np
big = np.ones(16 * 1024 * 1024, np.float32)  # 64 MB
d = np.arange(3, dtype=np.int32); feats = np.ones((3, 1728), np.float32); path = np.array([0, 1], np.int32)
def t(f, cold):
    ts = []
    for _ in range(30):
        if cold: big.sum()
        t0 = time.perf_counter_ns(); f(); ts.append(time.perf_counter_ns() - t0)
    return sorted(ts)[15] / 1e3
for name, f in [("depths.max", lambda: int(d.max())), ("features[path]", lambda: feats[path]), ("len+1", lambda: len(path) - 1)]:
    print(f"{name:16s} warm {t(f, False):6.1f} us  cold {t(f, True):6.1f} us")
