"""Per-round draft depth for chain policies: draft as deep as pays, or not at all.

A round that drafts d tokens emits E(d) = 1 + sum_{i<=d} prod_{j<=i} p_j tokens on average, where p_j is
the chance that position j is accepted given that j - 1 was, and costs c(d) seconds (propose + verify
+ accept). Depth 0 is a plain decode step (a one-node tree). The chooser keeps decayed counts of
p_j and a moving average of c(d) measured on this machine, and picks argmax E(d) / c(d), so
content the drafter predicts badly, or a machine where verify is dear, falls back towards plain
decoding instead of running slower than it.

Under sampling c(d) comes from a fixed cost model (`fixed_cost`) and the choice depends only on
acceptance, itself a function of the seed. A seed's tokens would not depend on timings (sampled
acceptance emits plain decoding's draw per token), but measured costs, re-learnt by every sampled
generation, were no faster (docs/speculative.md §3).
"""

from __future__ import annotations


# The fixed cost model (docs/speculative.md §3), in sampled plain steps: a sampled step also runs the sampler
# over the vocabulary, so rounds cost fewer of them than greedy rounds cost greedy steps. Attention over the
# context costs ATTENTION_WEIGHT x its share of a step's bytes in time, and each token of a round pays a share
# of a step at short context (its node of the verify; for a drafted token also its drafter row) plus a share of
# the step's attention (its node attends to the whole context). Refitted 2026-12-07 on the Zen 4 VM from
# sampled rounds (temperature 0.7, top-p 0.9) interleaved with plain sampled decoding in one process, then
# chosen by the policy's speed on the five E7 workloads: fixed chains of 1, 2, 3 and 5 drafted tokens cost
# 1.11-1.20, 1.23-1.38, 1.34-1.60 and 1.53 steps on chat, 1.48, 1.70, 1.97 and 2.58 on 2.3K-3.3K-token
# documents; priced at those documents' costs the chooser stayed on plain steps where a first draft lands
# half the time, so drafted tokens are priced a little below them there (1.23 / 1.46 / 1.69 / 2.15).
ATTENTION_WEIGHT = 1.9
DRAFTED_NODE = 0.18
NODE_ATTENTION = 0.27
# A copied draft (eyas.speculative.lookup) runs no drafter: its tokens cost their verify nodes alone (copies of
# 1 token over a 2.7K-token document took 1.11-1.28 steps, of 4 tokens 1.59-1.98).
VERIFY_NODE = 0.08
COPY_NODE_ATTENTION = 0.36


def fixed_cost(d: int, context_share: float = 0.0, node: float = DRAFTED_NODE,
               attention: float = NODE_ATTENTION) -> float:
    """A round drafting d tokens in plain decode steps at the same context: cheap at short context, and
    dearer as the context grows, since every node of the verify attends to all of it. context_share: the
    attention state's bytes over the weights' bytes (`target.state_bytes / target.weight_bytes`), a
    function of the committed length alone, so the model stays deterministic. node: a token's cost in
    steps at short context; attention: the share of a step's attention time that a token adds."""
    a = ATTENTION_WEIGHT * max(0.0, context_share)
    return 1.0 + d * (node + attention * a) / (1.0 + a)


def lookup_fixed_cost(d: int, context_share: float = 0.0) -> float:
    """`fixed_cost` for a round that verifies d copied tokens: the same context term, no drafter."""
    return fixed_cost(d, context_share, VERIFY_NODE, COPY_NODE_ATTENTION)


class AcceptanceBound:
    """Under sampling a drafted token lands only when the target's draw equals it, so at any position no
    drafter is accepted more often than the largest probability of the target's (filtered) row there.
    A decayed mean of that probability over the plain steps (`observe`, from the sampler) bounds p_1, the
    first drafted token's acceptance: at high temperatures, where it is low, drafting and its probes stop
    without trying; greedy choosers have none (1). Deeper positions are not capped: they are tried only
    where the first landed, where the target is surer than on average (capping them too took sampled code
    generation's tau from 2.74 to 2.41 at temperature 0.7, top-p 0.9), and copies of earlier text are not
    either, for the same reason (a match is where text repeats)."""

    DECAY = 0.9  # per plain step: the bound follows the content over the last ~10 tokens

    def __init__(self):
        self._sum = self._n = 0.0

    def observe(self, top_prob: float) -> None:
        self._sum = self.DECAY * self._sum + float(top_prob)
        self._n = self.DECAY * self._n + 1.0

    @property
    def value(self) -> float:
        return self._sum / self._n if self._n else 1.0


class DepthChooser:
    """max_depth: deepest chain to draft. Call `choose()` before a round, `observe()` after it.
    cost: None to measure c(d) from the rounds' times, or a function d -> relative cost (then the
    choice is deterministic: it depends on acceptance alone)."""

    DECAY = 0.97  # per try of a position: recent tries weigh more (content changes within a reply)
    COST_EMA = 0.2  # weight of a new round's time in c(d)
    PROBE_EVERY = 16  # rounds between re-measurements of a neighbouring depth of the current choice
    MAX_PROBE_GAP = 64  # while plain steps win, probes of depth 1 come at gaps doubling up to this
    # Drafting must promise this much more than plain steps: the measured costs are noisy and miss some
    # of what drafting costs (cache traffic, the drafter catching up after plain steps), so a draft
    # predicted to gain less than this loses as often as it wins.
    MARGIN = 0.05

    # Under sampling nothing carries over from earlier requests, so each generation starts from the
    # prior; until a first draft has this many (decayed) tries, the choice between drafting one token
    # and a plain step takes p_1 one standard deviation up (optimism while uncertain): one rejected
    # first draft no longer leaves a 2K-token document on plain steps (a first draft is accepted 66 %
    # of the time there), and a drafter that is never right costs at most ~3 tries.
    EXPLORE_TRIES = 6.0

    # A generation's first rounds run slow: after the prefill, plain decode steps of the default model took
    # 3.1-4.3 ms, then 2.4 from the fifth on (AMX VM, 2026-12-06). Timed there, a plain step looked ~50 %
    # dearer than it is, and chat drafted at break-even depths it then never left (0.89-0.93x on short
    # replies, where one drafted token a round gave 1.01-1.13x). So these rounds price nothing: they draft
    # one token (or follow the carried table); the rounds after them time c(1), then PLAIN_TIMINGS plain
    # steps, and c(0) follows its lowest times (a slow phase makes every round slower, never faster).
    WARMUP_ROUNDS = 4
    PLAIN_TIMINGS = 2

    # The previous generation's acceptance counts as at most this many tries per position: enough to
    # start drafting where drafts paid, few enough that content the drafter misses (a chat after code)
    # turns it back to plain steps within a handful of rounds.
    CARRIED_TRIES = 4.0
    # ... and those tries fade by this factor at each drafting round of the new generation, whichever
    # positions it reached: a deep position is tried only after the ones before it landed, so on content
    # the drafter misses (chat after raw code) carried deep acceptance (~0.9) outlived the new first
    # drafts' misses and kept chains of 2-3 tokens running at ~0.5 accepted tokens a round. Faded, a deep
    # position falls back to its prior, the position before it, within a handful of rounds.
    CARRY_FADE = 0.85

    def __init__(self, max_depth: int, cost=None, previous: "DepthChooser | None" = None,
                 costs_of: "DepthChooser | None" = None):
        """previous: the chooser of the previous generation with the same drafter (greedy only: the
        choice may then depend on earlier requests, which greedy output never does). Its measured
        costs and, as a few tries' worth (CARRIED_TRIES), its acceptance carry over, so a new generation starts where the
        last one ended instead of re-measuring (on content the drafter predicts badly, each
        generation would otherwise pay for its own first drafts).
        costs_of: another chooser whose cost table this one shares (measured and updated in place by
        both), for rounds that cost the same whatever their acceptance: copied drafts of every match
        size, so each of them prices its depths from all their rounds.
        """
        if not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"[speculative] max_depth must be an integer >= 1, got {max_depth!r}")
        self.max_depth = max_depth
        self.fixed = cost is not None
        # c(d): seconds per round at depth d as measured, or the fixed model's relative costs
        self.cost: list[float | None] = [None] * (max_depth + 1)
        if self.fixed:
            self.cost = [float(cost(d)) for d in range(max_depth + 1)]
        self.tried = [0.0] * (max_depth + 1)  # [j]: decayed rounds that drafted j after accepting j - 1
        self.accepted = [0.0] * (max_depth + 1)  # [j]: ... and accepted j
        # The previous generation's counts (CARRIED_TRIES at most), fading by CARRY_FADE per drafting round
        self.carried_tried = [0.0] * (max_depth + 1)
        self.carried_accepted = [0.0] * (max_depth + 1)
        self.bound: AcceptanceBound | None = None  # caps p_1 (sampling: the generator sets it)
        self.rounds = 0
        self._probe = 0
        self._probing = False  # the coming round is a probe of one drafted token while plain steps win
        self._probe_gap = self.PROBE_EVERY
        self._next_probe = self.PROBE_EVERY
        # [d]: c(d) was measured in this generation. Carried costs were measured at another context length
        # (a round's cost grows with it: 1.3 steps for one drafted token at 100 tokens, 1.5 at 3K), so they
        # steer the first choices, and the first measurement here replaces them instead of averaging in.
        self.fresh = [self.fixed] * (max_depth + 1)
        self._plain_timed = 0  # plain steps timed in this generation
        self.warm = previous is not None and not self.fixed and not previous.fixed and previous.max_depth == max_depth
        if self.warm:
            self.cost = list(previous.cost)
            # ... but a plain step's only through the warm-up: it is the yardstick of every choice, and
            # drafting that its stale value favours never runs plain steps to correct it (after raw code,
            # c(0) carried as 5.1 ms kept chat drafting two tokens a round at p1 ~ 0.35 for three replies,
            # while a plain step there took 3.3-3.8 ms). So each generation times its own right after.
            tried, accepted = previous.total_tried(), previous.total_accepted()
            scale = [min(1.0, self.CARRIED_TRIES / t) if t > 0 else 0.0 for t in tried]
            self.carried_tried = [k * t for k, t in zip(scale, tried)]
            self.carried_accepted = [k * a for k, a in zip(scale, accepted)]
            self._probe_gap = previous._probe_gap  # probes stay as rare as they had become
            self._next_probe = previous._probe_gap
        if costs_of is not None:  # one cost table for rounds that cost the same (copies of any match size)
            if costs_of.max_depth != max_depth or costs_of.fixed != self.fixed:
                raise ValueError("[speculative] costs_of must have the same max_depth and cost kind")
            self.cost, self.fresh = costs_of.cost, costs_of.fresh

    def total_tried(self) -> list[float]:
        """[j]: this generation's decayed tries of position j plus the previous one's, as they stand now."""
        return [t + c for t, c in zip(self.tried, self.carried_tried)]

    def total_accepted(self) -> list[float]:
        return [a + c for a, c in zip(self.accepted, self.carried_accepted)]

    def set_fixed_cost(self, cost) -> None:
        """A fixed-cost chooser's model for the coming rounds (it changes with the context length)."""
        if not self.fixed:
            raise ValueError("[speculative] set_fixed_cost: this chooser measures its costs")
        self.cost[:] = [float(cost(d)) for d in range(self.max_depth + 1)]  # in place: costs_of shares the list

    @property
    def plain_cost(self) -> float | None:
        """c(0): a plain step's measured seconds (None until timed), or the fixed model's 1."""
        return self.cost[0]

    def use_plain_cost(self, seconds: float | None) -> None:
        """c(0) measured elsewhere: a chooser of copied drafts compares them with the plain steps that
        the drafter's chooser times (it never runs plain steps of its own)."""
        if not self.fixed and seconds is not None:
            self.cost[0] = seconds
            self.fresh[0] = True
            self._plain_timed = self.PLAIN_TIMINGS

    def acceptance(self, j: int) -> float:
        """p_j: its decayed counts with a prior worth two tries. Under measured costs (greedy) the prior
        is p_{j-1} (p_1's: 1/2): a position is accepted at least about as often as the one before it
        once that one landed (E7, depths 1-4: 0.70 / 0.81 / 0.83 / 0.98 on documents, 0.92 / 0.95 / 0.96
        / 0.99 on code), so a chain whose first tokens land reaches deeper positions before they have
        tries of their own (a 1/2 prior held 8-token copies at 2-3 tokens). Under sampling (the fixed
        cost model) the inherited prior is floored at 1/2: inheriting a low p_1 as it is kept code
        generation from drafting, while a uniform 1/2 kept landing chains at one token within a
        reply, where nothing carries over (docs/speculative.md §3, §8)."""
        *_, p = self._acceptances(j)
        return p

    def _acceptances(self, d: int):
        """p_1 .. p_d in one pass (each prior is the one before it; a fixed-cost chooser's at least 1/2)."""
        p = 0.5
        for j in range(1, d + 1):
            prior = max(0.5, p) if self.fixed else p
            p = (self.accepted[j] + self.carried_accepted[j] + 2.0 * prior) / (
                self.tried[j] + self.carried_tried[j] + 2.0)
            yield self._capped(j, p)

    def _capped(self, j: int, p: float) -> float:
        """p_j under the acceptance bound: a mean over positions, it caps the first draft alone."""
        return min(p, self.bound.value) if j == 1 and self.bound else p

    def expected_tokens(self, d: int) -> float:
        return self._expected_upto(d)[d]

    def _expected_upto(self, d: int) -> list[float]:
        """[E(0), .., E(d)] in one pass over p_1 .. p_d (each E(k) the same float sums as alone)."""
        totals, total, run = [1.0], 1.0, 1.0
        for p in self._acceptances(d):
            run *= p
            total += run
            totals.append(total)
        return totals

    def _cost_estimate(self, d: int, known: list | None = None) -> float:
        """c(d) as measured, else linear through the nearest measured depths around it, or the two
        deepest below it (a round's cost grows about linearly with the chain), else flat from the one
        measured. known: the measured (depth, cost) pairs, when the caller has listed them already."""
        if self.cost[d] is not None:
            return self.cost[d]
        if known is None:
            known = [(k, c) for k, c in enumerate(self.cost) if c is not None]
        below = [(k, c) for k, c in known if k < d]
        hi = min(((k, c) for k, c in known if k > d), default=None)
        if below and hi:
            lo = below[-1]
        elif len(below) >= 2:
            lo, hi = below[-2], below[-1]
        else:
            return (below[-1] if below else hi)[1]
        return lo[1] + (hi[1] - lo[1]) * (d - lo[0]) / (hi[0] - lo[0])

    def optimistic_acceptance(self, j: int) -> float:
        """p_j one standard deviation of its posterior up (Beta(accepted + 1, tried - accepted + 1))."""
        p, n = self.acceptance(j), self.tried[j] + self.carried_tried[j]
        return min(1.0, self._capped(j, p + (p * (1.0 - p) / (n + 3.0)) ** 0.5))

    def _bound_allows_drafting(self) -> bool:
        """Whether one drafted token accepted at the bound would beat a plain step (always without a bound)."""
        if self.bound is None or self.cost[0] is None or self.cost[1] is None:
            return True
        return (1.0 + self.bound.value) / self.cost[1] > (1.0 + self.MARGIN) / self.cost[0]

    def best(self) -> int:
        # Runs before every round: one pass over the acceptances and one list of the measured costs.
        expected = self._expected_upto(self.max_depth)
        known = [(k, c) for k, c in enumerate(self.cost) if c is not None]
        rates = [expected[d] / self._cost_estimate(d, known) for d in range(self.max_depth + 1)]
        d = max(range(1, self.max_depth + 1), key=lambda d: (rates[d], d))
        if rates[d] > rates[0] * (1.0 + self.MARGIN):
            return d
        if self.fixed and self.tried[1] < self.EXPLORE_TRIES:
            if (1.0 + self.optimistic_acceptance(1)) / self._cost_estimate(1) > rates[0] * (1.0 + self.MARGIN):
                return 1
        return 0

    def choose(self) -> int:
        self.rounds += 1
        self._probing = False
        if self.fixed:  # (never warm: sampling carries nothing over)
            if self.rounds == 1:
                return 1 if self._bound_allows_drafting() else 0
        elif self.rounds <= self.WARMUP_ROUNDS:  # untimed rounds: one drafted token, the cheapest sign of
            known = self.cost[0] is not None and self.cost[1] is not None  # whether drafting pays, or none
            return min(1, self.best()) if known else 1  # where a carried (or shared) table says drafts lose
        else:
            # Measured costs: a one-token chain's (unless carried), then a plain step's, timed here after the
            # warm-up; deeper ones are extrapolated from these two until they are chosen.
            if not self.warm and self.cost[1] is None:
                return 1
            if self._plain_timed < self.PLAIN_TIMINGS:
                return 0
        d = self.best()
        if d > 0:
            self._probe_gap = self.PROBE_EVERY
        if self.rounds < self._next_probe:
            return d
        if d == 0:  # drafts do not pay: look again with the cheapest draft, less and less often
            self._next_probe = self.rounds + self._probe_gap
            self._probe_gap = min(2 * self._probe_gap, self.MAX_PROBE_GAP)
            if not self._bound_allows_drafting():  # not even a draft landing at the bound would pay
                return 0
            self._probing = True
            return 1
        # Keep the neighbours' costs and acceptance current, deeper and shallower in turn: the best depth
        # moves a step at a time, and a probe of a far depth (a deep chain over a long context) costs most.
        self._next_probe = self.rounds + self.PROBE_EVERY
        self._probe += 1
        return d + 1 if self._probe % 2 == 1 and d < self.max_depth else d - 1

    def plain_round(self) -> int:
        """Instead of `choose()` when the round must be a plain step (a proposer with no drafter, whose
        rounds are copies or plain steps): counted like a chosen one, so its time prices c(0)."""
        self.rounds += 1
        return 0

    def observe(self, depth: int, accepted: int, seconds: float) -> None:
        """depth: tokens drafted this round; accepted: how many of them the target accepted."""
        if not 0 <= depth <= self.max_depth or not 0 <= accepted <= depth:
            raise ValueError(f"[speculative] observe: depth {depth}, accepted {accepted} out of range")
        # The warm-up's rounds (the first also ingests the whole prompt into the drafter) price nothing.
        if self.rounds > self.WARMUP_ROUNDS and not self.fixed:
            c = self.cost[depth]
            if not self.fresh[depth]:
                c = seconds
            elif depth == 0:  # down at once, up by the average: a plain step is the yardstick of every choice
                c = min(seconds, (1 - self.COST_EMA) * c + self.COST_EMA * seconds)
            else:
                c = (1 - self.COST_EMA) * c + self.COST_EMA * seconds
            self.cost[depth], self.fresh[depth] = c, True
            if depth == 0:
                self._plain_timed += 1
        if depth > 0:  # every drafting round weighs the previous generation's counts less (CARRY_FADE)
            self.carried_tried = [self.CARRY_FADE * t for t in self.carried_tried]
            self.carried_accepted = [self.CARRY_FADE * a for a in self.carried_accepted]
        # Only the positions this round tried fade: plain steps bring no news of the drafter, and
        # letting the counts fade through them would drift p_j back to the prior (0.5) and draft again.
        for j in range(1, depth + 1):
            if accepted >= j - 1:
                self.tried[j] = self.DECAY * self.tried[j] + 1.0
                self.accepted[j] = self.DECAY * self.accepted[j] + (1.0 if accepted >= j else 0.0)
        if accepted > 0:  # drafts are landing: if plain steps win now, look again soon
            self._probe_gap = self.PROBE_EVERY
            if self._probing:  # a probe landed: probe again next round, so a few tries can overturn
                self._next_probe = self.rounds + 1  # what an earlier reply left (4 tries' worth)
