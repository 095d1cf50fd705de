# Medians of the device runs in this folder (new: the spread prefetch, old: d251540's kqpack_avx512.h).
#   python docs/results/device-2026-12-07-spread/summary.py
import re, statistics, collections, pathlib
here = pathlib.Path(__file__).parent
k = collections.defaultdict(list)
for f in ("call1_ab.log", "call3_kernels.log"):
    for line in (here / f).read_text().splitlines():
        m = re.match(r"round \d+ (new|old) T=(\d+): (.*)", line)
        if not m:
            continue
        for cell in m.group(3).split("|"):
            c = cell.split()
            if len(c) >= 4 and c[-1] == "us":  # call 1: "Q4_K r1 362.2 us" (8192x2048)
                k[(c[0], "8192x2048", c[1], m.group(2), m.group(1))].append(float(c[2]))
            elif len(c) == 4:  # call 3: "Q4_K 8192x2048 r1 384.3"
                k[(c[0], c[1], c[2], m.group(2), m.group(1))].append(float(c[3]))
print("kernel, cold bench_matmul, median us (runs): new | old")
for key in sorted({x[:4] for x in k}):
    n, o = k[key + ("new",)], k[key + ("old",)]
    print(f"  {key[0]} {key[1]} {key[2]} T={key[3]}: {statistics.median(n):7.1f} ({len(n)}) | {statistics.median(o):7.1f} ({len(o)})  new/old {statistics.median(n) / statistics.median(o):.2f}")
s = collections.defaultdict(list)
for f in ("call1_ab.log", "call2_pairs_2threads.log", "call2_pairs_16threads.log"):
    for line in (here / f).read_text().splitlines():
        m = re.match(r"r\d+ (new|old) (?:smollm2-1.7b-random-)?(\S+) thr (\d+) step ([\d.]+) ms \| M2 ([\d.]+) \| M4 ([\d.]+) \| M8 ([\d.]+)", line)
        if m:
            for name, v in zip(("step ms", "M2", "M4", "M8"), m.groups()[3:]):
                s[(m.group(2), m.group(3), name, m.group(1))].append(float(v))
print("model, decode step and M-node forwards in steps, median (runs): new | old")
for key in sorted({x[:3] for x in s}):
    n, o = s[key + ("new",)], s[key + ("old",)]
    print(f"  {key[0]} thr {key[1]} {key[2]}: {statistics.median(n):6.2f} ({len(n)}) | {statistics.median(o):6.2f} ({len(o)})")
