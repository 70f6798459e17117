"""TrueSkill ratings from per-episode rankings, reported as SR anchored on Scripted Combat.

Each episode is a free-for-all of single-player teams, one per policy, ranked by score. The
`trueskill` library (defaults: mu 25, sigma 25/3, beta 25/6, tau 25/300, 10 % draws) updates the
ratings. SR = 1500 + k (mu - mu_anchor) with k = 100 / (1.645 sqrt(2) beta): two well-estimated
policies 100 SR apart have a 95 % win probability, since P(win) = Phi(dmu / (sqrt(2) beta)) when
sigma is negligible and Phi(1.645) = 0.95. The 95 % interval is SR +- 1.96 k sigma.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import trueskill

#: TrueSkill performance noise; the library default (sigma0 / 2 = 25 / 6), stated explicitly.
BETA = 25.0 / 6.0
SR_ANCHOR = 1500.0
SR_GAP = 100.0
#: One-sided 95 % quantile of the normal distribution (the win probability a 100 SR gap means).
Z_WIN = 1.645
#: Two-sided 95 % quantile (the confidence interval).
Z_CI = 1.96
ANCHOR = "scripted:Combat"


def sr_scale(beta: float = BETA) -> float:
    """SR points per unit of mu: k = 100 / (1.645 sqrt(2) beta)."""
    return SR_GAP / (Z_WIN * math.sqrt(2.0) * beta)


def skill_rating(mu: float, anchor_mu: float, beta: float = BETA) -> float:
    """SR of a policy with mean skill `mu` when the anchor's mean skill is `anchor_mu`."""
    return SR_ANCHOR + sr_scale(beta) * (mu - anchor_mu)


def win_probability(a: trueskill.Rating, b: trueskill.Rating, beta: float = BETA) -> float:
    """P(a beats b) in TrueSkill's model: Phi((mu_a - mu_b) / sqrt(2 beta^2 + sigma_a^2 + sigma_b^2))."""
    spread = math.sqrt(2.0 * beta * beta + a.sigma**2 + b.sigma**2)
    return 0.5 * (1.0 + math.erf((a.mu - b.mu) / (spread * math.sqrt(2.0))))


def ranks_from_scores(scores: Sequence[float | Sequence[float] | None]) -> list[int | None]:
    """Rank 0 is the best (highest) score; a score may be a tuple compared in order (a metric, then
    its tie-break). Equal scores share a rank: a draw, never an order by chance. A missing score
    (None, or NaN anywhere in it: a policy that did not play) gets no rank (None)."""
    keys = [_key(score) for score in scores]
    order = sorted((i for i, key in enumerate(keys) if key is not None), key=lambda i: keys[i], reverse=True)
    ranks: list[int | None] = [None] * len(keys)
    for position, i in enumerate(order):
        tied = position > 0 and keys[i] == keys[order[position - 1]]
        ranks[i] = ranks[order[position - 1]] if tied else position
    return ranks


def _key(score: float | Sequence[float] | None) -> tuple[float, ...] | None:
    if score is None:
        return None
    parts = tuple(score) if isinstance(score, (tuple, list)) else (score,)
    if any(part is None or math.isnan(part) for part in parts):
        return None
    return tuple(float(part) for part in parts)


class Ratings:
    """TrueSkill ratings of a fixed list of policies, updated one ranking at a time.

    `anchor` names the policy whose mu defines SR 1500; it must be one of `policies`.
    """

    def __init__(self, policies: Sequence[str], anchor: str = ANCHOR, beta: float = BETA) -> None:
        if anchor not in policies:
            raise ValueError(f"the SR anchor {anchor!r} is not among the policies {list(policies)}")
        if len(set(policies)) != len(policies):
            raise ValueError(f"policies must be distinct, got {list(policies)}")
        self.policies = list(policies)
        self.anchor = anchor
        self.beta = beta
        self.env = trueskill.TrueSkill(beta=beta)
        self.ratings = [self.env.create_rating() for _ in self.policies]

    def update(self, ranks: Sequence[int | None]) -> None:
        """Apply one episode's ranking (one entry per policy, lower is better, equal means a draw;
        None: the policy did not play, its rating stays as it was)."""
        if len(ranks) != len(self.policies):
            raise ValueError(f"expected {len(self.policies)} ranks, got {len(ranks)}")
        playing = [i for i, rank in enumerate(ranks) if rank is not None]
        if len(playing) < 2:
            return  # nobody to compare with
        rated = self.env.rate([(self.ratings[i],) for i in playing], ranks=[ranks[i] for i in playing])
        for i, (rating,) in zip(playing, rated, strict=True):
            self.ratings[i] = rating

    def sr(self) -> dict[str, float]:
        """SR of every policy now (the anchor is exactly 1500)."""
        anchor_mu = self.ratings[self.policies.index(self.anchor)].mu
        return {p: skill_rating(r.mu, anchor_mu, self.beta) for p, r in zip(self.policies, self.ratings, strict=True)}

    def table(self) -> list[dict[str, float | str]]:
        """One row per policy (in policy order): mu, sigma, SR and its 95 % interval."""
        k = sr_scale(self.beta)
        rows = []
        for (policy, sr), rating in zip(self.sr().items(), self.ratings, strict=True):
            half = Z_CI * k * rating.sigma
            rows.append({"policy": policy, "mu": rating.mu, "sigma": rating.sigma, "sr": sr,
                         "ci_low": sr - half, "ci_high": sr + half})
        return rows
def episode_ranks(scores: Sequence[float | None], tie_breaks: Sequence[float | None] | None) -> list[int | None]:
    """One episode's ranking: by score, equal scores by tie-break (None: draws); a policy without a
    score is not ranked. What `Standings` ranks by and `validate_results` re-derives."""
    if tie_breaks is None:
        return ranks_from_scores(scores)
    return ranks_from_scores([None if s is None else (s, t) for s, t in zip(scores, tie_breaks, strict=True)])


def history_entry(index: int, table: list[dict[str, Any]]) -> dict[str, Any]:
    """The sr_history entry of episode `index` from `Ratings.table()` (SR, mu and sigma per policy)."""
    return {"episode": index, **{key: {row["policy"]: row[key] for row in table} for key in ("sr", "mu", "sigma")}}


def payoff_table(policies: list[str], rankings: Iterable[Sequence[int | None]]) -> dict[str, dict[str, float | None]]:
    """{a: {b: share of the episodes both played in which a ranked above b}} (None: no such episode)."""
    n = len(policies)
    wins, games = [[0] * n for _ in range(n)], [[0] * n for _ in range(n)]
    for ranks in rankings:
        playing = [i for i, rank in enumerate(ranks) if rank is not None]
        for i in playing:
            for j in playing:
                if i != j:
                    games[i][j] += 1
                    wins[i][j] += ranks[i] < ranks[j]
    return {a: {b: (None if games[i][j] == 0 else wins[i][j] / games[i][j]) for j, b in enumerate(policies) if j != i}
            for i, a in enumerate(policies)}


def all_way_ties(rankings: Iterable[Sequence[int | None]]) -> int:
    """Episodes in which every policy that played (two or more) tied."""
    return sum(len(played) > 1 and max(played) == 0
               for played in ([rank for rank in ranks if rank is not None] for ranks in rankings))
