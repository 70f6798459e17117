"""Who plays the next episode: the anchor and `others` entries, by uncertainty and match quality.

The seating rule (docs/arena.md, "Who plays whom"):

1. The anchor always plays: SR is measured against it, and every episode then links every entry's
   rating to it.
2. Each other seat is drawn, one after another, with weight quality * sigma^2 / (1 + busy):
   sigma^2 puts the entries the arena knows least about first (a new one starts at sigma 8.3, one
   with a hundred episodes is near 1); quality is TrueSkill's match quality (its draw probability)
   of the seats drawn so far plus that candidate, so close matches, which teach the ratings most,
   come often; busy (the candidate's seats in episodes being played now) lets an entry already
   playing wait its turn.

Draws come from a generator seeded by the arena's seed and the claim number, and the candidates are
taken in entry order, so the seats are a deterministic function of the seed, the claim and the
ratings and in-flight seats at that moment (the database's state): a test can replay the choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import trueskill

from evaluation.rating import BETA

#: The default number of seats besides the anchor: 5 policies of 20 agents each in the canonical
#: 100-agent tournament format.
SEATS = 4
#: The most seats besides the anchor (9 policies: 11 agents each in the canonical format).
MAX_SEATS = 8


@dataclass(frozen=True)
class Candidate:
    """An active entry as the matchmaker sees it."""

    entry: int
    mu: float = trueskill.MU
    sigma: float = trueskill.SIGMA
    busy: int = 0  # its seats in episodes being played now


def seat_rng(seed: int, claim: int) -> np.random.Generator:
    """The draws of one claim's seating."""
    return np.random.default_rng([seed, claim, 0x5EA7])


def choose_seats(candidates: Sequence[Candidate], anchor: int, others: int, rng: np.random.Generator) -> list[int]:
    """Entry ids of one episode, the anchor first, then up to `others` more (fewer when the pool is
    smaller); see the module docstring for the rule. ValueError when only the anchor is there."""
    by_id = {c.entry: c for c in sorted(candidates, key=lambda c: c.entry)}
    if anchor not in by_id:
        raise ValueError(f"the anchor (entry {anchor}) is not among the candidates")
    pool = [c for c in by_id.values() if c.entry != anchor]
    if not pool:
        raise ValueError("the arena's pool holds only the anchor: add entries (nmmo arena add SPEC)")
    if others < 1:
        raise ValueError(f"an episode needs at least one seat besides the anchor, got {others}")
    env = trueskill.TrueSkill(beta=BETA)
    seated = [by_id[anchor]]
    for _ in range(min(others, len(pool))):
        weights = np.array([_weight(env, seated, c) for c in pool], dtype=np.float64)
        total = weights.sum()
        pick = int(rng.choice(len(pool), p=weights / total)) if total > 0 and np.isfinite(total) \
            else int(rng.integers(len(pool)))
        seated.append(pool.pop(pick))
    return [c.entry for c in seated]


def _weight(env: trueskill.TrueSkill, seated: list[Candidate], candidate: Candidate) -> float:
    uncertainty = candidate.sigma**2 / (1 + candidate.busy)
    teams = [(trueskill.Rating(c.mu, c.sigma),) for c in (*seated, candidate)]
    return float(env.quality(teams)) * uncertainty
