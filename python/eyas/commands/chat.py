"""`eyas chat`: an interactive multi-turn chat in the terminal.

Replies stream as they are generated; each turn reuses the KV cache of the conversation so far (the
server's prompt cache, one slot); the last line of every reply shows its speed and tau (tokens per
round). Sampling: the model's recommendation, else `eyas.api.CHAT_SAMPLING` (greedy decoding of small
chat models loops). Commands: /reset, /stats, /exit.
"""

from __future__ import annotations

import argparse
import queue
import sys

from eyas.commands.options import add_model_options, add_sampling_options, load_model, sampling_from

HELP = "commands: /reset (forget the conversation), /stats (totals so far), /exit (or Ctrl-D)"


def register(subparsers) -> None:
    p = subparsers.add_parser("chat", help="chat with a model in the terminal",
                              description="Interactive multi-turn chat. " + HELP)
    add_model_options(p)
    p.add_argument("--system", default=None, help="system message")
    p.add_argument("--max-tokens", type=int, default=512, help="tokens per reply at most")
    add_sampling_options(p, temperature_help="default: the model's recommendation, else 1.0 with top_p 0.9 (0 = greedy)")
    p.set_defaults(func=run)


class ChatSession:
    """A conversation over an engine with one slot: each turn's prompt extends the last one, so
    only the new messages are prefilled."""

    def __init__(self, model, *, system: str | None, sampling: dict, max_tokens: int, tree=None):
        from eyas.sampling import SamplingParams
        from eyas.server.engine import Engine

        self.model = model
        self.engine = Engine(model, max_concurrency=1, max_queue=1, tree=tree)
        self.system = system
        self.sampling = SamplingParams(**sampling)
        self.max_tokens = max_tokens
        self.totals = {"turns": 0, "tokens": 0, "decode_s": 0.0, "drafts": 0, "accepted": 0, "cached": 0}
        self.reset()

    def reset(self) -> None:
        self.messages = [{"role": "system", "content": self.system}] if self.system else []

    def _prompt(self) -> list[int]:
        """The conversation's ids; the oldest turns are dropped when a reply would not fit the context."""
        while True:
            ids = self.model.encode_prompt(self.messages, chat=True)
            turns = [i for i, m in enumerate(self.messages) if m["role"] != "system"]
            if len(ids) + self.max_tokens <= self.model.max_context or len(turns) <= 1:
                return ids
            del self.messages[turns[0]: turns[0] + 2]

    def ask(self, text: str, write) -> dict:
        """Stream the reply to `text` through write(piece); returns the engine's final record."""
        from eyas.server.engine import Request

        self.messages.append({"role": "user", "content": text})
        ids = self._prompt()
        room = self.model.max_context - len(ids)
        if room < 1:
            self.messages.pop()
            raise ValueError("[chat] the message does not fit the context; /reset or load with a larger --max-context")
        events: queue.Queue = queue.Queue()
        job = self.engine.submit(Request(ids, self.sampling, min(self.max_tokens, room)),
                                 lambda kind, payload: events.put((kind, payload)))
        try:
            while True:
                kind, payload = events.get()
                if kind == "text":
                    write(payload)
                elif kind == "done":
                    break
                else:
                    raise payload
        except BaseException:
            job.cancel()
            self.messages.pop()
            raise
        self.messages.append({"role": "assistant", "content": payload["text"]})
        t = self.totals
        spec = payload["speculative"]
        t["turns"] += 1
        t["tokens"] += payload["completion_tokens"]
        t["decode_s"] += payload["timings"]["decode_s"]
        t["drafts"] += spec["num_drafts"]
        t["accepted"] += spec["num_accepted_tokens"]
        t["cached"] += payload["cached_tokens"]
        return payload

    def close(self) -> None:
        self.engine.shutdown(cancel=True)


def tau(drafts: int, accepted: int) -> str:
    return f"tau {1 + accepted / drafts:.2f}" if drafts else "tau - (plain decoding)"


def summary_line(done: dict) -> str:
    spec = done["speculative"]
    return (f"[{done['completion_tokens']} tokens, {done['timings']['decode_tok_s']:.1f} tok/s, "
            f"{tau(spec['num_drafts'], spec['num_accepted_tokens'])}, {done['cached_tokens']} prompt tokens reused]")


def stats_line(t: dict) -> str:
    speed = t["tokens"] / t["decode_s"] if t["decode_s"] > 0 else 0.0
    return (f"[{t['turns']} replies, {t['tokens']} tokens, {speed:.1f} tok/s, {tau(t['drafts'], t['accepted'])}, "
            f"{t['cached']} prompt tokens reused]")


def run(args: argparse.Namespace) -> int:
    model = load_model(args)
    sampling = sampling_from(args, model.recommended_sampling())
    session = ChatSession(model, system=args.system, sampling=sampling, max_tokens=args.max_tokens, tree=args.tree)
    out = sys.stdout
    interactive = sys.stdin.isatty()
    print(f"eyas chat: {model.loaded.path.name} (temperature {sampling['temperature']}, top_p {sampling['top_p']}, "
          f"top_k {sampling['top_k']}). {HELP}", file=sys.stderr)
    try:
        while True:
            try:
                line = input("> " if interactive else "")
            except EOFError:
                break
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                break
            if text == "/reset":
                session.reset()
                print("[conversation reset]", file=out)
                continue
            if text == "/stats":
                print(stats_line(session.totals), file=out)
                continue
            if text.startswith("/"):
                print(f"unknown command {text.split()[0]}; {HELP}", file=out)
                continue
            try:
                done = session.ask(text, lambda piece: (out.write(piece), out.flush()))
            except KeyboardInterrupt:  # Ctrl-C stops this reply, not the chat
                print("\n[interrupted]", file=out)
                continue
            except ValueError as e:  # e.g. a message longer than the context: say so, keep chatting
                print(f"error: {e}", file=out)
                continue
            print(f"\n{summary_line(done)}", file=out)
    finally:
        session.close()
    return 0
