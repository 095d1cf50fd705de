"""Tree accept: greedy walk (exact arrays), the sampling distribution, and lossless tree sampling."""

import numpy as np
import pytest

from eyas import _core
from tests.test_sampling import filtered_distribution

speculative = _core.speculative

# The hand-worked tree of test_tree_expand: root 99; 1:10 2:11 under root; 3:12 under 1; 4:10 under 2; 5:10 under 4.
TOKENS = np.array([99, 10, 11, 12, 10, 10], np.int32)
PARENTS = np.array([-1, 0, 0, 1, 2, 4], np.int32)


def forced_logits(argmaxes, V=100):
    lg = np.zeros((len(argmaxes), V), np.float32)
    lg[np.arange(len(argmaxes)), argmaxes] = 5.0
    return lg


@pytest.mark.parametrize("argmaxes,path,tokens", [
    ([11, 0, 10, 0, 10, 3], [0, 2, 4, 5], [11, 10, 10, 3]),  # full path + bonus
    ([10, 12, 0, 7, 0, 0], [0, 1, 3], [10, 12, 7]),          # leaf at depth 2
    ([10, 13, 0, 0, 0, 0], [0, 1], [10, 13]),                # first level only
    ([5, 10, 10, 10, 10, 10], [0], [5]),                     # nothing accepted: bonus only
])
def test_greedy_hand_worked(argmaxes, path, tokens):
    r = speculative.accept(forced_logits(argmaxes), TOKENS, PARENTS)
    assert r["path"].tolist() == path
    assert r["tokens"].tolist() == tokens


@pytest.mark.parametrize("seed", range(6))
def test_greedy_from_argmaxes_equals_greedy_from_logits(seed):
    """accept_argmax (a verify's logits='argmax_all') walks the path accept walks over the logits."""
    rng = np.random.default_rng(seed)
    n, V = 12, 6  # few tokens: many children match, many walks go deep
    parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)], np.int32)
    tokens = rng.integers(0, V, n).astype(np.int32)
    logits = np.round(rng.standard_normal((n, V))).astype(np.float32)  # ties: the first index wins
    want = speculative.accept(logits, tokens, parents)
    got = speculative.accept_argmax(logits.argmax(-1).astype(np.int32), tokens, parents)
    assert got["path"].tolist() == want["path"].tolist() and got["tokens"].tolist() == want["tokens"].tolist()


def test_greedy_tie_takes_lower_id():
    lg = np.zeros((6, 100), np.float32)
    lg[0, [11, 10]] = 3.0  # tie between 10 and 11: argmax is 10 (first index), as in plain decoding
    r = speculative.accept(lg, TOKENS, PARENTS)
    assert r["path"].tolist()[:2] == [0, 1]


def greedy_ref(logits, tokens, parents):
    path, out, cur = [0], [], 0
    while True:
        a = int(np.argmax(logits[cur]))
        out.append(a)
        kids = [c for c in range(len(tokens)) if parents[c] == cur and tokens[c] == a]
        if not kids:
            return path, out
        cur = kids[0]
        path.append(cur)


def test_greedy_random_trees():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)], np.int32)
        tokens = rng.integers(0, 4, n).astype(np.int32)
        logits = rng.integers(0, 3, (n, 4)).astype(np.float32)
        r = speculative.accept(logits, tokens, parents)
        path, out = greedy_ref(logits, tokens, parents)
        assert r["tokens"].tolist() == out
        assert r["path"].tolist() == path


@pytest.mark.parametrize("t,k,p", [(1.0, 0, 1.0), (0.7, 0, 1.0), (1.3, 3, 1.0), (1.0, 0, 0.6), (0.5, 4, 0.8), (2.0, 1, 1.0)])
def test_target_probs(t, k, p):
    logits = np.random.default_rng(1).standard_normal(17).astype(np.float32) * 2
    np.testing.assert_allclose(speculative.target_probs(logits, t, k, p), filtered_distribution(logits, t, k, p), rtol=1e-12,
                               atol=1e-15)


def test_seeded_sampling_is_deterministic():
    logits = np.random.default_rng(2).standard_normal(50).astype(np.float32)
    a = [speculative.sample(logits, temperature=1.0, rng=r) for r in [speculative.Rng(7)] for _ in range(50)]
    b = [speculative.sample(logits, temperature=1.0, rng=r) for r in [speculative.Rng(7)] for _ in range(50)]
    c = [speculative.sample(logits, temperature=1.0, rng=r) for r in [speculative.Rng(8)] for _ in range(50)]
    assert a == b and a != c
    assert speculative.sample(logits, rng=speculative.Rng(0)) == int(np.argmax(logits))


# --- Lossless tree sampling on a target small enough to enumerate ------------------------------

V = 4
PARAMS = dict(temperature=0.8, top_k=3, top_p=0.9)
# A fixed draft tree: the root's children try 0, 1, a duplicate 0 and 3; deeper nodes below them.
TREE_TOKENS = [0, 0, 1, 0, 3, 2, 1, 3]
TREE_PARENTS = [-1, 0, 0, 0, 0, 1, 1, 5]


class ToyTarget:
    """Next-token logits as a fixed random function of the whole context."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.table = {}

    def logits(self, ctx):
        key = tuple(ctx)
        if key not in self.table:
            self.table[key] = (self.rng.standard_normal(V) * 1.5).astype(np.float32)
        return self.table[key]


def node_contexts(prefix):
    ctxs = []
    for i in range(len(TREE_TOKENS)):
        path, j = [], i
        while j > 0:
            path.append(TREE_TOKENS[j])
            j = TREE_PARENTS[j]
        ctxs.append(prefix + path[::-1])
    return ctxs


def run_trials(target, n_trials, accept_fn, length=3):
    counts = np.zeros(V**length, np.int64)
    tokens = np.array(TREE_TOKENS, np.int32)
    parents = np.array(TREE_PARENTS, np.int32)
    for _ in range(n_trials):
        out = [2]  # the root token; generated tokens follow it
        while len(out) < length + 1:
            tokens[0] = out[-1]
            logits = np.stack([target.logits(c) for c in node_contexts(out)])
            out += accept_fn(logits, tokens, parents)
        idx = 0
        for x in out[1:length + 1]:
            idx = idx * V + x
        counts[idx] += 1
    return counts


def exact_joint(target, length=3):
    probs = np.zeros(V**length)
    for idx in range(V**length):
        seq = [(idx // V ** (length - 1 - i)) % V for i in range(length)]
        ctx, p = [2], 1.0
        for x in seq:
            p *= filtered_distribution(target.logits(ctx), **PARAMS)[x]
            ctx.append(x)
        probs[idx] = p
    return probs


def chi2(counts, probs):
    live = probs > 0
    exp = probs[live] * counts.sum()
    return float(((counts[live] - exp) ** 2 / exp).sum()), int(live.sum()) - 1


def broken_accept(rng):
    """Tree sampling that forgets to zero rejected siblings before the residual draw."""

    def fn(logits, tokens, parents):
        out, cur = [], 0
        while True:
            p = filtered_distribution(logits[cur], **PARAMS)
            kids = [c for c in range(1, len(tokens)) if parents[c] == cur]
            nxt = None
            q = p.copy()
            for c in kids:
                x = tokens[c]
                if q[x] <= 0:
                    continue
                if rng.uniform() * q.sum() < q[x]:
                    nxt = c
                    break
                q[x] = 0.0
            if nxt is None:
                out.append(int(rng.choice(V, p=p)))  # bug: should draw from q / q.sum()
                return out
            out.append(int(tokens[nxt]))
            cur = nxt

    return fn


def test_tree_sampling_reproduces_target_distribution():
    target = ToyTarget(3)
    rng = speculative.Rng(1234)

    def eyas_accept(logits, tokens, parents):
        return speculative.accept(logits, tokens, parents, rng=rng, **PARAMS)["tokens"].tolist()

    n = 20000
    probs = exact_joint(target)
    counts = run_trials(target, n, eyas_accept)
    assert counts[probs == 0].sum() == 0, "emitted a token outside the top-k/top-p set"
    stat, df = chi2(counts, probs)
    limit = df + 6 * np.sqrt(2 * df)  # ~1e-6 false-failure rate
    assert stat < limit, f"chi2 {stat:.1f} >= {limit:.1f} (df {df})"
    # The same statistic rejects a sampler whose residual is not renormalised.
    bad = run_trials(target, n, broken_accept(np.random.default_rng(5)))
    assert chi2(bad, probs)[0] > 3 * limit


def test_accept_bad_inputs():
    lg = forced_logits([0] * 6)
    with pytest.raises(ValueError, match=r"\[accept\].*parents\[0\]"):
        speculative.accept(lg, TOKENS, np.array([0, 0, 0, 1, 2, 4], np.int32))
    with pytest.raises(ValueError, match=r"\[accept\].*earlier node"):
        speculative.accept(lg, TOKENS, np.array([-1, 0, 3, 1, 2, 4], np.int32))
    with pytest.raises(ValueError, match=r"\[accept\].*vocabulary"):
        speculative.accept(lg, np.array([99, 10, 11, 12, 10, 100], np.int32), PARENTS)
    with pytest.raises(ValueError, match=r"\[accept\]"):
        speculative.accept(lg[:5], TOKENS, PARENTS)
    with pytest.raises(ValueError, match=r"\[accept\].*rng"):
        speculative.accept(lg, TOKENS, PARENTS, temperature=1.0)
    with pytest.raises(ValueError, match=r"\[accept\].*top_p"):
        speculative.accept(lg, TOKENS, PARENTS, temperature=1.0, top_p=0.0, rng=speculative.Rng(0))
    with pytest.raises(ValueError, match=r"\[accept\]"):
        speculative.accept(lg.astype(np.float64), TOKENS, PARENTS)


def test_accept_hidden_matches_full_logits():
    """Logits computed per visited node (rms_norm + matmul of one row) equal a full [N, V] pass bit for bit,
    so both accept paths give the same result, greedy and sampled."""
    rng = np.random.default_rng(9)
    N, H, Vt = 6, 32, 100
    hidden = rng.standard_normal((N, H)).astype(np.float32)
    norm = (1 + 0.1 * rng.standard_normal(H)).astype(np.float32)
    w = rng.standard_normal((Vt, H)).astype(np.float32)
    xn = _core.ops.rms_norm(hidden, norm, 1e-5)
    logits = _core.ops.matmul(xn, w.view(np.uint8).reshape(-1), 0, [Vt, H])
    tokens = TOKENS.copy()
    tokens[1:] = np.argsort(-logits[0])[:5].astype(np.int32)  # make the walk go somewhere
    for params in (dict(), dict(temperature=0.9, top_p=0.95)):
        a = speculative.accept(logits, tokens, PARENTS, rng=speculative.Rng(4), **params)
        b = speculative.accept_hidden(hidden, norm, (w, 0, [Vt, H]), 1e-5, tokens, PARENTS, rng=speculative.Rng(4),
                                      **params)
        assert a["path"].tolist() == b["path"].tolist() and a["tokens"].tolist() == b["tokens"].tolist()
    with pytest.raises(ValueError, match=r"\[accept\].*out_w"):
        speculative.accept_hidden(hidden, norm, (w[:, :8].copy(), 0, [Vt, 8]), 1e-5, tokens, PARENTS)
    with pytest.raises(ValueError, match=r"\[accept\].*hidden"):
        speculative.accept_hidden(hidden[:3], norm, (w, 0, [Vt, H]), 1e-5, tokens, PARENTS)
