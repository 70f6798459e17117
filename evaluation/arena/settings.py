"""The arena's format: what every episode of one arena plays, fixed once the first is committed.

Why fixed: a rating compares entries only across episodes of one game. The config (as TOML text),
the ticks, the seats besides the anchor, the ranking metric and its tie-break, the anchor and the
per-tick time budget are stored in the database (meta ``format``) by the first ``nmmo arena serve``;
a later one that asks for another value is refused, naming it, once the log holds an episode
(before that the format may still change). The arena's seed (seats and episode seeds derive from
it with the claim number) and the deal's secret are drawn then too; the secret never leaves the
database (no endpoint or command prints it).
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any

import numpy as np

from evaluation.arena import db
from evaluation.arena.matchmaking import MAX_SEATS, SEATS
from evaluation.episode import draw_secret, with_horizon
from evaluation.rating import ANCHOR
from evaluation.tournament import METRIC, TIE_BREAK, TOURNAMENT_CONFIG, equal_shares
from nmmo import config as config_module
from nmmo.config import Config
from nmmo.core import world

#: The paper's scripted bots, always in the pool with the anchor (scripted:Combat).
BOTS = ("scripted:Meander", "scripted:Forage", "scripted:ForageNoExplore", "scripted:CombatNoExplore")


@dataclass(frozen=True)
class ArenaFormat:
    """What every episode of the arena plays."""

    config_name: str
    config: str  # TOML text
    ticks: int
    seats: int  # besides the anchor
    time_budget: float
    metric: str = METRIC
    tie_break: str = TIE_BREAK
    anchor: str = ANCHOR

    def base_config(self) -> Config:
        return _base_config(self.config, self.config_name, self.ticks)

    def episode_config(self, policies: int) -> str:
        """The TOML text of an episode with this many policies (PLAYER_N cut to equal shares)."""
        return _episode_config(self.config, self.config_name, self.ticks, policies)

    def public(self) -> dict[str, Any]:
        """What the endpoints show (the config by name only; the TOML is in the database)."""
        return {k: v for k, v in asdict(self).items() if k != "config"}


@cache
def _base_config(text: str, name: str, ticks: int) -> Config:
    return with_horizon(config_module.from_toml(text, name), ticks)


@cache
def _episode_config(text: str, name: str, ticks: int, policies: int) -> str:
    return equal_shares(_base_config(text, name, ticks), policies).to_toml()


def requested_format(config: str | None, ticks: int | None, seats: int | None,
                     time_budget: float | None) -> dict[str, Any]:
    """The format values the flags name (None: not given), checked; the config as TOML text."""
    out: dict[str, Any] = {}
    if config is not None:
        resolved = config_module.resolve(config)
        out["config_name"], out["config"] = resolved.name, resolved.to_toml()
    if ticks is not None:
        out["ticks"] = ticks
    if seats is not None:
        if not 1 <= seats <= MAX_SEATS:
            raise ValueError(f"--seats must be in 1..{MAX_SEATS} (policies besides the anchor), got {seats}")
        out["seats"] = seats
    if time_budget is not None:
        if not time_budget > 0:
            raise ValueError(f"--time-budget must be positive, got {time_budget}")
        out["time_budget"] = float(time_budget)
    return out


def settle_format(conn: sqlite3.Connection, requested: dict[str, Any], seed: int | None) -> ArenaFormat:
    """The arena's format: the stored one, with the `requested` values when no episode is committed
    yet (a ValueError naming the value otherwise); a new arena's from `requested` and the defaults."""
    stored = db.get_meta(conn, "format")
    episodes = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    if stored is not None and episodes:
        for key, value in requested.items():
            if stored.get(key) != value:
                shown = "the config's TOML" if key == "config" else f"{key} {value!r}"
                raise ValueError(f"this arena's log holds {episodes} episode(s) of its format, and {shown} differs "
                                 f"from it ({_flag(key)} {stored.get(key)!r} there): an arena plays one format; "
                                 "leave the flag out, or start another --db")
        if seed is not None and seed != db.get_meta(conn, "seed"):
            raise ValueError(f"--seed {seed} differs from this arena's seed {db.get_meta(conn, 'seed')}: leave it out")
        return ArenaFormat(**stored)
    base = stored or {}
    if "config" not in requested and "config" not in base:
        requested = {**requested_format(TOURNAMENT_CONFIG, None, None, None), **requested}
    values = {"ticks": None, "seats": SEATS, "time_budget": 1.0, **base, **requested}
    if values["ticks"] is None:
        values["ticks"] = int(config_module.from_toml(values["config"], values["config_name"]).HORIZON)
    known = {f.name for f in fields(ArenaFormat)}
    form = ArenaFormat(**{k: v for k, v in values.items() if k in known})
    check_format(form)
    with db.transaction(conn):
        db.set_meta(conn, "format", asdict(form))
        if db.get_meta(conn, "seed") is None or (seed is not None and not episodes):
            db.set_meta(conn, "seed", 0 if seed is None else seed)
        if db.get_meta(conn, "secret") is None:
            db.set_meta(conn, "secret", format(draw_secret(), "x"))
    return form


def _flag(key: str) -> str:
    return {"config_name": "--config", "config": "--config", "time_budget": "--time-budget"}.get(key, f"--{key}")


def check_format(form: ArenaFormat) -> None:
    """A format every episode can play: enough agent slots for the anchor and all seats."""
    config = form.base_config()
    if form.seats + 1 > config.PLAYER_N // config.PLAYER_TEAM_SIZE:
        raise ValueError(f"--seats {form.seats} plus the anchor need {form.seats + 1} teams, but {form.config_name} "
                         f"has PLAYER_N={config.PLAYER_N}")


def episode_seed(seed: int, claim: int) -> int:
    """The env seed of claim `claim` (a pure function of the arena's seed and the claim number)."""
    return int(np.random.SeedSequence([seed, claim]).generate_state(1)[0])


def map_seed(form: ArenaFormat, claim: int) -> int:
    """Claim `claim` plays held-out map ``claim % MAP_N_EVAL``: the tournament's map pool, in turn."""
    config = form.base_config()
    return world.map_seed(config, claim % config.MAP_N_EVAL, "eval")


def secret(conn: sqlite3.Connection) -> int:
    """The deal's secret (see `evaluation.episode.deal`)."""
    return int(db.get_meta(conn, "secret"), 16)
