"""Soak test: many generations and server requests, then resident memory and open descriptors
compared with their values after a warm-up. A leak shows as growth beyond the bound; exits 1 then.

    PYTHONPATH=build/<name>/pkg python bench/soak.py --generations 1000 --requests 1000
    PYTHONPATH=build/<name>/pkg python bench/soak.py --tiny --generations 100 --requests 100   # quick

--tiny uses a random tiny model and drafter (tests/fixtures, needs the repository); otherwise the
default model with its bundled drafter. Mixed work: plain and speculative, greedy and sampled, chat
and raw prompts, lengths 1..64; requests streaming and not, both endpoints, bad requests, clients that
hang up. Then one model from 2, 4 and 8 threads (each waits its turn) and forks used concurrently.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARMUP_FRACTION = 0.1  # growth is measured from here: first-use allocations (caches, pools) are not leaks
RSS_BOUND_MB = 48  # allowed resident growth after the warm-up
PROMPTS = ["Hello", "Write a haiku about rivers.", "def fib(n):", "1, 2, 3,", "The capital of France is",
           "Explain speculative decoding in one sentence.", "zzz", "Once upon a time"]


def rss_mb(pid: str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def fds(pid: str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def tiny_files(folder: Path) -> tuple[str, str]:
    sys.path.insert(0, str(ROOT))
    import eyas
    from tests.fixtures import tiny_models
    from tests.parity.cases_speculative import random_checkpoint, write_checkpoint

    target = tiny_models.random_llama_gguf(folder / "tiny.gguf")
    cfg, t = random_checkpoint(1, eyas.load(str(target), drafter="none").spec)
    return str(target), str(write_checkpoint(folder / "drafter", cfg, t))


class Meter:
    """RSS and descriptors at the warm-up mark and at the end, for one process."""

    def __init__(self, name: str, pid: str = "self"):
        self.name, self.pid, self.start = name, pid, None

    def mark(self):
        self.start = (rss_mb(self.pid), fds(self.pid))

    def report(self, count: int) -> bool:
        end = (rss_mb(self.pid), fds(self.pid))
        ok = end[0] - self.start[0] <= RSS_BOUND_MB and end[1] <= self.start[1]
        print(f"{self.name:<12} {count:>6} done  RSS {self.start[0]:7.1f} -> {end[0]:7.1f} MiB "
              f"(bound +{RSS_BOUND_MB})  fds {self.start[1]} -> {end[1]}  {'ok' if ok else 'LEAK?'}", flush=True)
        return ok


def soak_generations(target: str, drafter: str, n: int, rng: random.Random) -> bool:
    import eyas

    models = [eyas.load(target, drafter="none"), eyas.load(target, drafter=drafter)]
    meter = Meter("generations")
    for i in range(n):
        if i == int(n * WARMUP_FRACTION):
            meter.mark()
        model = models[i % 2]
        prompt = rng.choice(PROMPTS)
        kw = dict(max_tokens=rng.randint(1, 64), temperature=rng.choice([0.0, 0.8]), seed=i,
                  chat=rng.random() < 0.5 and model.loaded.chat_template is not None)
        if rng.random() < 0.2:  # a stream abandoned half way: its lock and state must be released
            stream = model.generate(prompt, stream=True, **kw)
            next(iter(stream), None)
            stream.close()
        else:
            model.generate(prompt, **kw)
    return meter.report(n)


def soak_threads(target: str, drafter: str) -> bool:
    """One model shared by 2/4/8 threads, and one fork per thread: each output equals its output alone."""
    import eyas

    model = eyas.load(target, drafter=drafter)
    want = {p: model.generate(p, max_tokens=24).tokens for p in PROMPTS}
    ok = True
    for n_threads in (2, 4, 8):
        for use_forks in (False, True):
            got, errors = {}, []

            def work(k, m):
                try:
                    for p in PROMPTS[k % 3 :: 3]:
                        got[(k, p)] = m.generate(p, max_tokens=24).tokens
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))

            threads = [threading.Thread(target=work, args=(k, model.fork() if use_forks else model))
                       for k in range(n_threads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            same = all(tokens == want[p] for (_, p), tokens in got.items())
            print(f"threads      {n_threads} {'forks' if use_forks else 'shared'}: {len(got)} generations, "
                  f"errors {errors or 0}, outputs {'equal to alone' if same else 'DIFFER'}", flush=True)
            ok &= same and not errors
    return ok


def soak_server(target: str, drafter: str, n: int, rng: random.Random) -> bool:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "eyas.cli", "serve", "--model", target, "--drafter", drafter,
                             "--port", str(port), "--max-context", "512", "--log-level", "error"])
    try:
        deadline = time.time() + 120
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("eyas serve did not start")
            time.sleep(0.2)
        meter, statuses = Meter("server", str(proc.pid)), {}
        for i in range(n):
            if i == int(n * WARMUP_FRACTION):
                meter.mark()
            status = one_request(httpx, url, rng, i)
            statuses[status] = statuses.get(status, 0) + 1
        time.sleep(1)  # let the server close the connections the last requests left
        ok = meter.report(n)
        print(f"server       statuses {dict(sorted(statuses.items()))}", flush=True)
        return ok and 500 not in statuses and proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def one_request(httpx, url: str, rng: random.Random, i: int) -> int:
    kind = rng.random()
    n = rng.randint(1, 48)
    chat = {"messages": [{"role": "user", "content": rng.choice(PROMPTS)}], "max_tokens": n,
            "temperature": rng.choice([0, 0.8]), "seed": i}
    if kind < 0.1:  # bad request
        r = httpx.post(url + "/v1/chat/completions", json={**chat, "temperature": "hot"}, timeout=60)
        return r.status_code
    if kind < 0.2:  # a streaming client that hangs up after the first event
        with httpx.stream("POST", url + "/v1/completions", json={"prompt": "Go", "max_tokens": 64, "stream": True},
                          timeout=60) as r:
            next(r.iter_lines(), None)
        return 299  # hung up (not an HTTP status)
    if kind < 0.5:
        with httpx.stream("POST", url + "/v1/chat/completions", json={**chat, "stream": True}, timeout=60) as r:
            for _ in r.iter_lines():
                pass
            return r.status_code
    route, body = ("/v1/chat/completions", chat) if kind < 0.8 else (
        "/v1/completions", {"prompt": rng.choice(PROMPTS), "max_tokens": n})
    return httpx.post(url + route, json=body, timeout=60).status_code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generations", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--tiny", action="store_true", help="a random tiny model and drafter instead of the default model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phases", default="generations,threads,server", help="which phases to run, comma-separated")
    args = ap.parse_args()
    phases = set(args.phases.split(","))
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        if args.tiny:
            target, drafter = tiny_files(Path(tmp))
        else:
            from eyas.models.default import default_model_path

            target, drafter = str(default_model_path()), "default"
        ok = True
        if "generations" in phases:
            ok &= soak_generations(target, drafter, args.generations, rng)
        if "threads" in phases:
            ok &= soak_threads(target, drafter)
        if "server" in phases:
            ok &= soak_server(target, drafter, args.requests, rng)
    print("soak: ok" if ok else "soak: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
