"""The arena's ratings: a pure function of the committed episode log.

Why a function of the log: then the stored numbers never need to be trusted. Every start of the
server recomputes them from ``episodes`` and ``seats`` in commit order (``episodes.id``) and checks
them against the ``ratings`` snapshot; a mismatch is logged and the recompute wins. Each episode is
rated exactly as a tournament episode is (`evaluation.rating.Ratings.update` on its ranking, with
the tournaments' beta): the ranks are re-derived from the seats' stored scores and tie-breaks
(`evaluation.rating.episode_ranks`), and only the entries that played it move. An entry starts at
TrueSkill's default rating whenever it joined, so joining late changes nothing before it.

SR is computed when read: 1500 + k (mu - the anchor's mu), as in every leaderboard of this project.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import trueskill

from evaluation.rating import BETA, Z_CI, Ratings, episode_ranks, skill_rating, sr_scale

#: Two ratings closer than this are the same (they are computed by the same operations in the same
#: order, so in practice they are bit-identical).
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Rating:
    mu: float
    sigma: float
    episodes: int = 0

    def as_tuple(self) -> tuple[float, float, int]:
        return (self.mu, self.sigma, self.episodes)


def default_rating() -> Rating:
    """Where every entry starts: TrueSkill's default (mu 25, sigma 25/3)."""
    return Rating(trueskill.MU, trueskill.SIGMA, 0)


def rate_episode(current: dict[int, Rating], seated: Sequence[int], ranks: Sequence[int | None]) -> dict[int, Rating]:
    """The new ratings of one episode's seated entries (in seat order, one rank each; None: did
    not play). Every seated entry counts one more episode; only the ranked ones (two or more) move."""
    before = [current.get(entry, default_rating()) for entry in seated]
    names = [str(entry) for entry in seated]
    table = Ratings(names, anchor=names[0], beta=BETA)  # the anchor only matters for SR, not for an update
    table.ratings = [trueskill.Rating(r.mu, r.sigma) for r in before]
    table.update(list(ranks))
    return {entry: Rating(after.mu, after.sigma, old.episodes + 1)
            for entry, old, after in zip(seated, before, table.ratings, strict=True)}


def finite(value: float | None) -> float | None:
    """None for a missing or NaN score (SQLite stores NaN as NULL: ranking must see what is stored)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def seat_ranks(scores: Sequence[float | None], tie_breaks: Sequence[float | None]) -> list[int | None]:
    """An episode's ranking from its seats' scores and tie-breaks, as stored."""
    return episode_ranks([finite(s) for s in scores], [finite(t) for t in tie_breaks])


def episode_log(conn: sqlite3.Connection) -> Iterable[tuple[int, list[sqlite3.Row]]]:
    """(episode id, its seats in seat order) in commit order, streamed."""
    rows = conn.execute("SELECT episode_id, entry_id, score, tie_break, rank FROM seats ORDER BY episode_id, seat")
    current, seats = None, []
    for row in rows:
        if row["episode_id"] != current and seats:
            yield current, seats
            seats = []
        current = row["episode_id"]
        seats.append(row)
    if seats:
        yield current, seats


def recompute(conn: sqlite3.Connection) -> tuple[dict[int, Rating], list[int]]:
    """Ratings from the log alone, and the episodes whose stored ranks disagree with the ranks their
    stored scores give (should be none: the log is then internally inconsistent)."""
    ratings: dict[int, Rating] = {}
    inconsistent = []
    for episode, seats in episode_log(conn):
        ranks = seat_ranks([s["score"] for s in seats], [s["tie_break"] for s in seats])
        if ranks != [s["rank"] for s in seats]:
            inconsistent.append(episode)
        ratings.update(rate_episode(ratings, [s["entry_id"] for s in seats], ranks))
    return ratings, inconsistent


def differences(stored: dict[int, tuple[float, float, int]], computed: dict[int, Rating]) -> list[str]:
    """How the stored snapshot differs from a recompute, one line per entry (none: they agree)."""
    lines = []
    for entry in sorted(set(stored) | set(computed)):
        have, want = stored.get(entry), computed.get(entry)
        if have is None or want is None:
            lines.append(f"entry {entry}: {'missing from the snapshot' if have is None else 'not in the log'}")
        elif (abs(have[0] - want.mu) > TOLERANCE or abs(have[1] - want.sigma) > TOLERANCE
              or have[2] != want.episodes):
            lines.append(f"entry {entry}: stored mu {have[0]:.6f} sigma {have[1]:.6f} over {have[2]} episodes, "
                         f"the log gives {want.mu:.6f} {want.sigma:.6f} over {want.episodes}")
    return lines


def sr_rows(ratings: dict[int, Rating], anchor: int) -> dict[int, dict[str, float]]:
    """SR, its 95 % interval, mu and sigma of every rated entry (the anchor at exactly 1500; an arena
    whose anchor never played puts it at TrueSkill's default)."""
    anchor_mu = ratings.get(anchor, default_rating()).mu
    k = sr_scale(BETA)
    out = {}
    for entry, rating in ratings.items():
        sr = skill_rating(rating.mu, anchor_mu, BETA)
        half = Z_CI * k * rating.sigma
        out[entry] = {"sr": sr, "ci_low": sr - half, "ci_high": sr + half, "mu": rating.mu, "sigma": rating.sigma,
                      "episodes": rating.episodes}
    return out
