"""SpeculativeGenerator: the speculative counterpart of `eyas.generation.plain_steps`.

`steps(prompt_ids, sampling)` yields the tokens of each round (1 + accepted drafted tokens); stop
handling, streaming and detokenization are `eyas.generation.Generation`'s, shared with plain decoding.
The drafter is any `Proposer`: the rounds never ask which family it is.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from typing import Iterator

import numpy as np

from eyas.speculative.adaptive import AcceptanceBound, DepthChooser, fixed_cost, lookup_fixed_cost
from eyas.speculative.lookup import PromptLookup, chain_tree
from eyas.speculative.metrics import SpeculativeMetrics
from eyas.speculative.policy import TreePolicy
from eyas.speculative.proposer import Proposer
from eyas.speculative.rounds import ROOT_PARENTS, advance, advances_in_one_call, drop_unlikely, split_aux, tree_depth


# The last greedy generation's depth chooser per proposer: the next one starts from its costs and
# acceptance (DepthChooser's `previous`). Weak keys: a dropped model takes its entry with it.
_GREEDY_CHOOSERS: "weakref.WeakKeyDictionary[Proposer, DepthChooser]" = weakref.WeakKeyDictionary()
_GREEDY_LOOKUP_CHOOSERS: "weakref.WeakKeyDictionary[Proposer, dict[int, DepthChooser]]" = weakref.WeakKeyDictionary()


def choose_policy(policy, proposer: Proposer) -> TreePolicy:
    """The tree policy a generation runs: `policy` (a TreePolicy or its string form, e.g. "4,5,16"),
    else the proposer's recommendation, else `TreePolicy.auto()`."""
    if isinstance(policy, str):
        policy = TreePolicy.parse(policy)
    if policy is not None and not isinstance(policy, TreePolicy):
        raise ValueError(f"[speculative] tree must be a TreePolicy, its string form or None, got {policy!r}")
    return policy or proposer.policy or TreePolicy.auto()


def joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts as one array (the single part itself: most rounds have one)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def draw(row: np.ndarray, sampling, rng, bound: AcceptanceBound | None) -> int:
    """Plain decoding's draw from a logits row F32[V] (`SamplingParams.sample`); with a bound, the same draw
    through `sample_with_top`, its row's top probability observed into the bound."""
    if bound is None:
        return sampling.sample(row, rng)
    token, top = sampling.sample_with_top(row, rng)
    bound.observe(top)
    return token


def kept_positions(target, proposer: Proposer, cached: int) -> int:
    """Positions of a cached prompt that a speculative generation keeps. The proposer's pair p is (feature
    of position p, token p + 1): it stays valid while token p + 1 is still a cached prompt id; the target
    recomputes the features from there on. A target with recurrent layers returns to some lengths only."""
    return target.truncatable(min(cached - 1, proposer.length)) if cached > 0 else 0


class SpeculativeGenerator:
    """target: `_core.Transformer` built with the proposer's aux_layers; proposer: any `Proposer`."""

    def __init__(self, target, proposer: Proposer, policy: TreePolicy | str | None = None, *,
                 prefill_chunk: int = 512, draft_gate=None):
        self.policy = choose_policy(policy, proposer)
        aux = list(target.aux_layers)
        feats = list(proposer.feature_layers)
        # Lazy logits when the target also captures its final state (aux id = num_layers).
        self.lazy = proposer.target_head is not None and aux == feats + [target.num_layers]
        if aux != feats and not self.lazy:
            raise ValueError(f"[speculative] the target captures aux layers {aux}, the proposer needs "
                             f"{proposer.aux_layers}; build the Transformer with aux_layers=proposer.aux_layers")
        if not proposer.drafts and not (self.policy.adaptive and self.policy.lookup):
            raise ValueError(f"[speculative] the {proposer.family!r} family has no drafter and drafts only copies "
                             "of earlier text: use tree 'auto' or 'auto:D'")
        self.target = target
        self.proposer = proposer
        self.n_features = len(feats)
        self.prefill_chunk = prefill_chunk
        # Asked before each round (generation.stream); False makes it a plain step, greedy or sampled.
        self.draft_gate = draft_gate
        # A round's verify, accept and commit, and a plain step's draw, in one call (`rounds.advance`)
        self.fused = advances_in_one_call(target)
        self.stats = SpeculativeMetrics()

    def metrics(self) -> dict:
        return self.stats.as_dict()

    def steps(self, prompt_ids, sampling, *, cached: int = 0) -> Iterator[list[int]]:
        """sampling: `eyas.sampling.SamplingParams`; one rng serves the first token and every round.
        cached: leading prompt ids the target already holds (prompt caching, `eyas.generation.stream`)."""
        target, proposer = self.target, self.proposer
        keep = kept_positions(target, proposer, cached)
        if keep > 0:
            target.truncate(keep)
            proposer.truncate(keep)
        else:
            keep = 0
            target.reset()
            proposer.reset(target.capacity)
        self.stats = SpeculativeMetrics()
        rng = sampling.make_rng()
        ids = np.asarray(prompt_ids, dtype=np.int32)
        aux, logits = self._prefill(ids[keep:])
        # Sampled adaptive policies bound acceptance by the top probability of the target's rows.
        bound = AcceptanceBound() if self.policy.adaptive and not sampling.greedy else None
        first = draw(logits[-1], sampling, rng, bound)  # the same draw plain decoding makes
        yield [first]
        # Pairs the proposer has not ingested yet, as parts joined once at its next round (plain steps
        # add one pair each: appending to one array would copy all of them every step).
        pending_aux, pending_tokens = [aux], [np.append(ids[keep + 1:], np.int32(first)).astype(np.int32)]
        # Greedy depths follow measured times. Sampled tokens do not depend on the depths either (each is
        # plain decoding's draw), but sampled depths follow a fixed cost model: measured costs, starting
        # afresh each generation, were no faster (docs/speculative.md §3), and the model keeps a seed's
        # rounds, not only its tokens, the same on every run.
        greedy = sampling.greedy
        chooser = lookup = copies = None  # copies: match length -> the chooser of copied drafts' depth
        if self.policy.adaptive:
            previous = _GREEDY_CHOOSERS.get(proposer) if greedy else None
            chooser = DepthChooser(self.policy.depth, cost=None if greedy else fixed_cost, previous=previous)
            chooser.bound = bound
            if greedy:
                _GREEDY_CHOOSERS[proposer] = chooser
        if self.policy.lookup:  # copies of earlier text (eyas.speculative.lookup), where they pay
            lookup = PromptLookup()
            lookup.extend(ids)
            lookup.extend([first])
            previous = _GREEDY_LOOKUP_CHOOSERS.get(proposer, {}) if greedy else {}
            # One chooser per match size (their acceptance differs: a longer match is right more often),
            # sharing one cost table (a copy round costs the same whatever the match).
            copies = {}
            for n in lookup.SIZES:
                copies[n] = DepthChooser(self.policy.depth, cost=None if greedy else lookup_fixed_cost,
                                         previous=previous.get(n), costs_of=copies.get(lookup.SIZES[0]))
            if greedy:
                _GREEDY_LOOKUP_CHOOSERS[proposer] = copies
        weights = max(1, target.weight_bytes)
        chains: dict[int, TreePolicy] = {}  # the adaptive policy's chain of each depth, built once
        last = None  # (chooser, depth, accepted, start time) of the previous round: its cost runs to this
        # round's start, so it includes what the caller does with each round's tokens (plain steps make more rounds)
        drafter_done = False  # the context is full: the last steps run plain, and their pairs are dropped
        try:
            while True:
                if last is not None:
                    last[0].observe(last[1], last[2], time.perf_counter() - last[3])
                    last = None
                room = target.capacity - target.length
                if room < 2:  # no space left for a tree: finish with plain steps (the proposer is done)
                    drafter_done = True
                    root = int(pending_tokens[-1][-1])
                    while True:
                        out = target.decode(root, logits="last")
                        root = sampling.sample(out["logits"][-1], rng)
                        yield [root]
                policy = self.policy
                gated = self.draft_gate is not None and not self.draft_gate()
                share = 0.0 if greedy else target.state_bytes / weights  # the fixed cost models' context term
                if chooser and chooser.fixed:  # the fixed model's costs at this round's context
                    chooser.set_fixed_cost(lambda d: fixed_cost(d, share))
                copied, n = lookup.continuation(min(self.policy.depth, room - 1)) if lookup and not gated else ([], 0)
                if copied:
                    copier = copies[n]
                    if copier.fixed:
                        copier.set_fixed_cost(lambda d: lookup_fixed_cost(d, share))
                    else:
                        copier.use_plain_cost(chooser.plain_cost)
                    depth = min(copier.choose(), len(copied))
                    if depth > 0:
                        t0 = time.perf_counter()
                        tree = chain_tree(int(pending_tokens[-1][-1]), copied[:depth])
                        acc, features = advance(target, tree, self.n_features, self.lazy, sampling, rng,
                                                proposer.target_head, one_call=self.fused)
                        s = self.stats
                        s.verify_s += time.perf_counter() - t0
                        s.observe(tree.size, len(acc.path) - 1)
                        s.observe_lookup(depth, len(acc.path) - 1)
                        last = (copier, depth, len(acc.path) - 1, t0)
                        # The drafter reads these pairs at its next round, as it does a plain step's.
                        pending_aux.append(features)
                        pending_tokens.append(acc.tokens)
                        emitted = acc.tokens.tolist()
                        lookup.extend(emitted)
                        yield emitted
                        continue
                if gated:
                    depth = 0  # a plain step that the chooser neither schedules nor times
                else:
                    depth = (chooser.choose() if proposer.drafts else chooser.plain_round()) if chooser else policy.depth
                if depth == 0:  # a plain step; the proposer ingests its pair before the next propose
                    t0 = time.perf_counter()
                    root = int(pending_tokens[-1][-1])
                    features, tokens = self._plain_step(root, sampling, rng, bound)
                    self.stats.verify_s += time.perf_counter() - t0
                    self.stats.observe(1, 0)
                    last = None if gated else (chooser, 0, 0, t0)
                    pending_aux.append(features)
                    pending_tokens.append(tokens)
                    emitted = tokens.tolist()
                    if lookup:
                        lookup.extend(emitted)
                    yield emitted
                    continue
                if policy.adaptive:
                    policy = chains.get(depth)
                    if policy is None:
                        policy = chains[depth] = TreePolicy.chain(depth, min_prob=self.policy.min_prob)
                if policy.total_tokens > room:
                    policy = dataclasses.replace(policy, total_tokens=room)
                t0 = time.perf_counter()
                pairs = joined(pending_tokens)
                proposer.ingest(joined(pending_aux), pairs)
                t_ingested = time.perf_counter()
                tree = drop_unlikely(proposer.propose(policy), policy.min_log_prob)
                t1 = time.perf_counter()
                acc, features = advance(target, tree, self.n_features, self.lazy, sampling, rng, proposer.target_head,
                                        one_call=self.fused)
                t2 = time.perf_counter()
                depth_drafted = tree_depth(tree)
                proposer.observe(len(acc.path) - 1, depth_drafted)  # a proposer that picks its drafter from acceptance
                s = self.stats
                s.propose_s += t1 - t0
                s.verify_s += t2 - t1
                s.observe(tree.size, len(acc.path) - 1, depth_drafted)
                if chooser:
                    # A catch-up ingest (the prompt, or the pairs of the plain steps since the last draft) is
                    # paid once for many rounds, not by this one: its time would make drafting look dearer.
                    catch_up = len(pairs) > depth + 1 or proposer.caught_up
                    last = (chooser, tree.size - 1, len(acc.path) - 1, t_ingested if catch_up else t0)
                # The accepted nodes' features pair with the tokens that follow them (reference §3.1).
                pending_aux, pending_tokens = [features], [acc.tokens]
                emitted = acc.tokens.tolist()  # one conversion for the lookup and the caller
                if lookup:
                    lookup.extend(emitted)
                yield emitted
        except GeneratorExit:
            # The server's gated requests (draft_gate) may end without their drafter having read the
            # pairs of their plain steps; read them now, so the next turn's prompt cache keeps them.
            if self.draft_gate is not None and proposer.drafts and not drafter_done:
                proposer.ingest(np.concatenate(pending_aux), np.concatenate(pending_tokens))
            raise

    def _plain_step(self, root: int, sampling, rng, bound: AcceptanceBound | None) -> tuple[np.ndarray, np.ndarray]:
        """A round with nothing drafted: plain decoding's own step (greedy: forward(logits="argmax"),
        so the same bits; sampled: the last row through the C++ sampler on the rounds' rng, the
        distribution a one-node tree's accept would draw from, its top probability into `bound`) that
        also captures the root's drafter features: (features F32[1, F*H], next token int32[1])."""
        if self.fused:  # the same step, sampled in the engine (no logits row copied out to Python)
            out = self.target.advance(np.array([root], np.int32), ROOT_PARENTS, rng=rng, capture_aux=True,
                                      top=bound is not None, **sampling.filters())
            if bound is not None:
                bound.observe(out["top"])
            return split_aux(out["aux"], self.n_features, self.lazy)[0], out["tokens"]
        greedy = sampling.greedy
        out = self.target.decode(root, logits="argmax" if greedy else "last", capture_aux=True)
        features = split_aux(out["aux"], self.n_features, self.lazy)[0]
        token = out["argmax"] if greedy else draw(out["logits"][-1], sampling, rng, bound)
        return features, np.array([token], np.int32)

    def _prefill(self, ids: np.ndarray):
        aux_parts, logits = [], None
        for start in range(0, len(ids), self.prefill_chunk):
            chunk = ids[start : start + self.prefill_chunk]
            last = start + self.prefill_chunk >= len(ids)
            out = self.target.prefill(chunk, logits="last" if last else "none", capture_aux=True)
            aux_parts.append(split_aux(out["aux"], self.n_features, self.lazy)[0])
            logits = out.get("logits")
        return np.concatenate(aux_parts), logits
