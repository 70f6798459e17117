"""Population play: the learner trains against a league of its own past selves and scripted bots.

- Pool: scripted bots (by default `scripted:Forage` and `scripted:Combat`, the SR anchor) plus a
  frozen snapshot of the learner every `snapshot_every` iterations (``ckpt:OUT/league/learner_000040.pt``).
  Any policy spec can join (`nmmo.policy`).
- Opponents: every PPO iteration each training env draws one member; it plays the env's odd agent
  slots and the learner the even ones (the tournament's round-robin split for two policies). Only
  the learner's rows enter the PPO loss. Sampling is ``uniform``, ``latest`` (the newest snapshot:
  self-play; the bots until the first snapshot) or ``rating`` (members drawn in proportion to
  TrueSkill's match quality against the learner, so close opponents come most often).
- Ratings: each env's rollout is a match of the learner against its opponent. The side with fewer
  deaths per agent slot wins, equal counts draw; TrueSkill with the tournaments' beta updates both,
  and SR is anchored like tournament SR (scripted:Combat = 1500 while it is in the pool).
- Files: ``OUT/league.json`` (members, ratings, match counts, SR history; written atomically, read
  back by ``--resume``) and ``OUT/league.png`` (SR of every member over the iterations). The file is
  data: a member it names that would import code (``file.py:Class``, ``pkg.module:Class``) is refused
  on load unless the same spec was given this run (`nmmo.policy.check_spec_from_file`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import trueskill

from baselines.env_policies import EnvPolicies
from evaluation.rating import ANCHOR, BETA, skill_rating
from nmmo.io.files import atomic_write_bytes
from nmmo.policy import check_spec_from_file, load_policy_class

LEARNER = "learner"
SAMPLING = ("uniform", "latest", "rating")
LEAGUE_FILE = "league.json"
#: The flag whose specs a league file may name (`League.load`'s `allowed`).
LEAGUE_FLAG = "--league-bots"


@dataclass
class Member:
    """One policy in the pool and its record."""

    spec: str
    added: int = 0  # iteration it joined
    mu: float = trueskill.MU
    sigma: float = trueskill.SIGMA
    wins: int = 0
    losses: int = 0
    draws: int = 0

    def rating(self) -> trueskill.Rating:
        return trueskill.Rating(self.mu, self.sigma)


@dataclass
class League:
    """The pool, its ratings and the opponent sampler (see the module docstring)."""

    out: Path
    sampling: str = "uniform"
    snapshot_every: int = 10
    seed: int = 0
    members: list[Member] = field(default_factory=list)
    learner: Member = field(default_factory=lambda: Member(LEARNER))
    history: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.sampling not in SAMPLING:
            raise ValueError(f"league sampling must be one of {SAMPLING}, got {self.sampling!r}")
        if self.snapshot_every < 1:
            raise ValueError(f"snapshot_every must be >= 1, got {self.snapshot_every}")
        self.out = Path(self.out)
        self.rng = np.random.default_rng([self.seed, len(self.history)])
        self.trueskill = trueskill.TrueSkill(beta=BETA)

    @classmethod
    def create(cls, out: str | Path, bots: Sequence[str] = ("scripted:Forage", ANCHOR), **kwargs: Any) -> League:
        """A new league whose pool starts with `bots` (policy specs, checked now)."""
        league = cls(Path(out), **kwargs)
        for spec in bots:
            league.add(spec, 0)
        if not league.members:
            raise ValueError("the league needs at least one opponent in its pool")
        return league

    @classmethod
    def load(cls, out: str | Path, allowed: Collection[str] = ()) -> League:
        """The league saved in OUT/league.json (for --resume). Its members are checked before any
        is imported: one that imports code must be among `allowed`, the specs given this run."""
        path = Path(out) / LEAGUE_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ValueError(f"no league to resume at {str(path)!r}") from None
        except json.JSONDecodeError as err:
            raise ValueError(f"{str(path)!r} is not a league file: {err}") from None
        members = [Member(**m) for m in data["members"]]
        for member in members:
            check_spec_from_file(member.spec, allowed, str(path), LEAGUE_FLAG)
        return cls(Path(out), data["sampling"], data["snapshot_every"], data["seed"], members,
                   Member(**data["learner"]), data["history"])

    # ------------------------------------------------------------ the pool
    def add(self, spec: str, iteration: int, rating: trueskill.Rating | None = None) -> Member:
        """Put a policy spec in the pool (its class must load now, not mid-training)."""
        if any(m.spec == spec for m in self.members):
            raise ValueError(f"{spec!r} is already in the league")
        load_policy_class(spec)
        member = Member(spec, iteration)
        if rating is not None:
            member.mu, member.sigma = rating.mu, rating.sigma
        self.members.append(member)
        return member

    def snapshot_path(self, iteration: int) -> Path:
        return self.out / "league" / f"learner_{iteration:06d}.pt"

    def add_snapshot(self, path: Path, iteration: int) -> Member:
        """A frozen copy of the learner joins with the learner's rating at that moment."""
        return self.add(f"ckpt:{path}", iteration, self.learner.rating())

    def sample(self, n: int) -> list[Member]:
        """`n` opponents drawn by the league's sampling rule."""
        if self.sampling == "latest":
            snapshots = [m for m in self.members if m.spec.startswith("ckpt:")]
            pool = [max(snapshots, key=lambda m: m.added)] if snapshots else self.members
            return [pool[i] for i in self.rng.integers(len(pool), size=n)]
        if self.sampling == "rating":
            weights = self.match_quality()
            return [self.members[i] for i in self.rng.choice(len(self.members), size=n, p=weights / weights.sum())]
        return [self.members[i] for i in self.rng.integers(len(self.members), size=n)]

    def match_quality(self) -> np.ndarray:
        """TrueSkill's draw probability of the learner against each member (high = evenly matched)."""
        learner = self.learner.rating()
        return np.array([trueskill.quality_1vs1(learner, m.rating(), env=self.trueskill) for m in self.members])

    # ------------------------------------------------------------- ratings
    def record(self, opponent: Member, learner_deaths: float, opponent_deaths: float) -> None:
        """One match: fewer deaths per slot wins; equal is a draw."""
        drawn = learner_deaths == opponent_deaths
        learner_won = learner_deaths < opponent_deaths
        first, second = (self.learner, opponent) if learner_won or drawn else (opponent, self.learner)
        a, b = trueskill.rate_1vs1(first.rating(), second.rating(), drawn=drawn, env=self.trueskill)
        first.mu, first.sigma, second.mu, second.sigma = a.mu, a.sigma, b.mu, b.sigma
        if drawn:
            self.learner.draws += 1
            opponent.draws += 1
        else:
            first.wins += 1
            second.losses += 1

    def sr(self) -> dict[str, float]:
        """SR of the learner and every member, anchored on scripted:Combat (else on the first member)."""
        anchor = next((m for m in self.members if m.spec == ANCHOR), self.members[0])
        return {m.spec: skill_rating(m.mu, anchor.mu) for m in [self.learner, *self.members]}

    def end_iteration(self, iteration: int) -> None:
        """Note the SR table of this iteration and save the league."""
        self.history.append({"iteration": iteration, "sr": self.sr()})
        self.save()

    def table(self) -> list[dict[str, Any]]:
        """The league table: one row per member (learner first), by SR."""
        sr = self.sr()
        rows = [{"policy": m.spec, "sr": sr[m.spec], "mu": m.mu, "sigma": m.sigma, "wins": m.wins,
                 "losses": m.losses, "draws": m.draws, "added": m.added} for m in [self.learner, *self.members]]
        return sorted(rows, key=lambda row: -row["sr"])

    # --------------------------------------------------------------- files
    def to_dict(self) -> dict[str, Any]:
        return {"sampling": self.sampling, "snapshot_every": self.snapshot_every, "seed": self.seed,
                "learner": vars(self.learner), "members": [vars(m) for m in self.members],
                "history": self.history, "table": self.table()}

    def save(self) -> Path:
        path = self.out / LEAGUE_FILE
        atomic_write_bytes(path, json.dumps(self.to_dict(), indent=1).encode())
        return path

    def plot(self) -> Path | None:
        """OUT/league.png: SR of each member (and the learner) over the iterations."""
        if not self.history:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5))
        names = [LEARNER, *(m.spec for m in self.members)]
        for name in names:
            points = [(h["iteration"], h["sr"][name]) for h in self.history if name in h["sr"]]
            label = name if not name.startswith("ckpt:") else Path(name[5:]).stem
            ax.plot(*zip(*points, strict=True), label=label, linewidth=2.5 if name == LEARNER else 1.2)
        ax.set_xlabel("PPO iteration")
        ax.set_ylabel("SR (scripted:Combat = 1500)")
        ax.set_title(f"League ({self.sampling} sampling)")
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=80)
        plt.close(fig)
        path = self.out / "league.png"
        atomic_write_bytes(path, buffer.getvalue())
        return path


class Opponents(EnvPolicies):
    """The opponents, one per env (`play` sets this iteration's), acting for the env's odd slots."""

    def play(self, members: list[Member]) -> None:
        """Set the draw of this iteration: env k plays members[k] (a member kept from the last draw
        keeps its memory)."""
        for k, member in enumerate(members):
            self.assign(k, member.spec)

    @staticmethod
    def learner_rows(num_envs: int, slots: int) -> np.ndarray:
        """True for the learner's rows (even slots of every env)."""
        return np.tile(np.arange(slots) % 2 == 0, num_envs)

    def opponent_actions(self, obs: dict[str, np.ndarray], ids: np.ndarray, alive: np.ndarray) -> np.ndarray:
        """(rows, 3) actions: each opponent's for its live rows, no-ops elsewhere."""
        learner = self.learner_rows(len(self.policies), self.slots)
        return self.act(obs, ids, alive & ~learner)
