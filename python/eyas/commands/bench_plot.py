"""`eyas bench --plot FILE.png`: speed ratio and per-depth acceptance per workload, in one figure.

matplotlib is an optional extra (`pip install 'eyas[plot]'`); it is imported only here.
"""

from __future__ import annotations

from pathlib import Path

INSTALL_HINT = "pip install 'eyas[plot]' (or pip install matplotlib)"


def fail(msg: str) -> None:
    raise ValueError(f"[bench] {msg}")


def check_plotting(path: str | Path) -> None:
    """Fails now, before any benchmarking, when the plot could not be written."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        fail(f"--plot {path}: the file name must end in .png, .svg or .pdf")
    if not path.parent.exists():
        fail(f"--plot {path}: folder {path.parent} does not exist")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        fail(f"--plot needs matplotlib: {INSTALL_HINT}")


def plot(result: dict, path: str | Path) -> None:
    """Left: speculative / plain decode speed per workload (the range of single repeats as whiskers, its worst
    prompt as a dot, 1.0 marked).
    Right: acceptance rate at each draft depth per workload."""
    check_plotting(path)
    import matplotlib

    matplotlib.use("Agg")  # files only: no display is needed or wanted
    import matplotlib.pyplot as plt

    names = list(result["workloads"])
    w = [result["workloads"][n] for n in names]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = range(len(names))
    ratio = [v["speedup"] for v in w]
    # Whiskers: the lowest and highest ratio of a single repeat (the machine's noise), where there are several.
    each = [v.get("speedup_per_repeat") or [v["speedup"]] for v in w]
    whiskers = [[r - min(e) for r, e in zip(ratio, each)], [max(e) - r for r, e in zip(ratio, each)]]
    left.bar(xs, ratio, color="#4c72b0", label="all prompts (whiskers: single repeats)", yerr=whiskers, capsize=4, ecolor="#333333")
    left.scatter(xs, [v["worst_speedup"] for v in w], color="#c44e52", zorder=3, label="worst prompt")
    left.axhline(1.0, color="black", linewidth=0.8)
    left.set_xticks(list(xs), names, rotation=20, ha="right")
    left.set_ylabel("speculative / plain decode speed")
    left.set_title("Speed ratio per workload")
    left.legend(loc="lower right")
    for n, v in zip(names, w):
        rates = v["acceptance_per_pos"]
        if rates:
            right.plot(range(1, len(rates) + 1), rates, marker="o", label=f"{n} (tau {v['mean_accepted_length']:.2f})")
    deepest = max((len(v["acceptance_per_pos"]) for v in w), default=0)
    right.set_xticks(list(range(1, deepest + 1)))
    right.set_ylim(0, 1.05)
    right.set_xlabel("draft depth")
    right.set_ylabel("accepted when drafted")
    right.set_title("Acceptance per depth")
    if any(v["acceptance_per_pos"] for v in w):
        right.legend(loc="lower left", fontsize="small")
    t = result["tree"]
    fig.suptitle(f"eyas bench: temperature {result['temperature']}, tree top_k={t['top_k']} depth={t['depth']}"
                 f"{' (adaptive)' if t['adaptive'] else ''}{' + lookup' if t.get('lookup') else ''}, {result['repeats']} repeat(s), "
                 f"{result['threads']} thread(s)", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
