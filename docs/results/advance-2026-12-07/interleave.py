"""Shared by advance_ab.py and window_ab.py: several ways of decoding the same prompts in one process, the order
rotating per prompt and repeat, each way keeping its own carried greedy choosers."""
from eyas.speculative import generator as gm

TABLES = (gm._GREEDY_CHOOSERS, gm._GREEDY_LOOKUP_CHOOSERS)


def use_choosers(proposer, carried) -> None:
    """Puts a way's carried choosers (None: none yet) in place before its generation."""
    for table, value in zip(TABLES, carried):
        table.pop(proposer, None)
        if value is not None:
            table[proposer] = value


def choosers_of(proposer) -> tuple:
    """The choosers a generation left, to carry to that way's next one."""
    return tuple(table.get(proposer) for table in TABLES)


def rotations(model, rows, order, repeats, run):
    """Warms every way up on the first prompt (32 tokens), then runs each prompt `repeats` times, the ways in an
    order rotating per prompt and repeat. Yields (prompt index, repeat, way, run's output) in run order."""
    first = model.encode_prompt(rows[0]["prompt"], chat=rows[0].get("chat", False))
    for m in order:
        run(first, 32, m)
    for i, row in enumerate(rows):
        ids = model.encode_prompt(row["prompt"], chat=row.get("chat", False))
        for r in range(repeats):
            k = (i * repeats + r) % len(order)
            for m in order[k:] + order[:k]:
                yield i, r, m, run(ids, row.get("max_tokens") or 128, m)
