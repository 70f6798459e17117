"""The scripted baselines of the Neural MMO paper, vectorized over the agents they control.

- Meander: a random move onto safe walkable terrain (never lava, never blocked).
- Forage (`scripted.forage`): forages from a map its agents share (what any of them has seen),
  walking remembered shortest paths to the resource with the least slack; explores away from its
  spawn when sated, never farther than it can safely come back from; keeps to the outer band,
  away from lava and hostile NPCs; never fights.
- Combat: Forage's logic, plus it sizes up visible entities by combat level and health, attacks
  weaker ones with the style that reaches them (melee, then range, then mage), chases weaker ones
  when fed, and flees stronger aggressors.
- ForageNoExplore / CombatNoExplore: the paper's "No Explore" variants (no exploration trips; a
  sated agent waits by the water).
"""

from __future__ import annotations

import numpy as np

from nmmo.core.enums import EntityAttr, NPCType, Style
from nmmo.core.rules import DELTAS, chebyshev, reaches
from scripted.core import Batch, Scripted, random_choice, safe_moves, to_rows
from scripted.forage import Forage, ForageNoExplore

__all__ = ["Combat", "CombatNoExplore", "Forage", "ForageNoExplore", "Meander", "Scripted"]


class Meander(Scripted):
    """Random safe moves."""

    def decide(self, batch: Batch) -> np.ndarray:
        return to_rows(batch, random_choice(safe_moves(batch), self.rng))


class Combat(Forage):
    """Forage plus fighting: attack weaker entities, chase them when fed, flee stronger aggressors."""

    #: A threat this close (Chebyshev) makes the agent flee.
    flee_radius = 3
    #: How much more health than an equal-level opponent counts as an edge worth attacking.
    health_edge = 3
    flee_attackers = False  # it sizes attackers up below: only stronger ones are fled

    def decide(self, batch: Batch) -> np.ndarray:
        if not self.config.has("Combat"):  # nothing to fight with: forage
            return super().decide(batch)
        moves = self.forage_moves(batch)
        ent, me = batch.entity, batch.me
        n_obs = ent.shape[1]
        seen = ent[:, :, EntityAttr.ID] != 0
        seen[:, 0] = False
        dist = chebyshev(ent[:, :, EntityAttr.ROW], ent[:, :, EntityAttr.COL],
                         me[:, None, EntityAttr.ROW], me[:, None, EntityAttr.COL])
        my_level, my_health = me[:, None, EntityAttr.COMBAT_LEVEL], me[:, None, EntityAttr.HEALTH]
        their_level, their_health = ent[:, :, EntityAttr.COMBAT_LEVEL], ent[:, :, EntityAttr.HEALTH]
        # Weaker: a lower combat level, or the same level and clearly less health.
        clearly_hurt = their_health + self.health_edge <= my_health
        weaker = seen & ((their_level < my_level) | ((their_level == my_level) & clearly_hurt))
        stronger = seen & ~weaker & (their_level >= my_level)
        aggressive = (
            (ent[:, :, EntityAttr.NPC_TYPE] == NPCType.HOSTILE)
            | (ent[:, :, EntityAttr.ATTACKER_ID] == me[:, None, EntityAttr.ID])
            | (ent[:, :, EntityAttr.ID] == me[:, None, EntityAttr.ATTACKER_ID])
        )
        threat = stronger & aggressive & (dist <= self.flee_radius)

        # Attack the nearest weaker entity in reach, with the style whose reach it falls in.
        reach = reaches(self.config)
        style = np.select([dist <= reach[Style.MELEE], dist <= reach[Style.RANGE], dist <= reach[Style.MAGE]],
                          [Style.MELEE, Style.RANGE, Style.MAGE], -1)
        allowed_style = np.take_along_axis(batch.style_mask, np.clip(style, 0, 2), axis=1) & (style >= 0)
        attackable = weaker & batch.target_mask[:, :n_obs] & allowed_style
        pick = np.argmin(np.where(attackable, dist, 10**6), axis=1)
        has_target = attackable[np.arange(batch.n), pick]
        styles = np.where(has_target, style[np.arange(batch.n), pick], 0)
        targets = np.where(has_target, pick, -1)

        # Chase the nearest weaker entity out of reach when fed; flee threats (overrides all moves).
        fed = np.minimum(me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]) >= self.margin + 2
        prey = weaker & ~attackable
        chase_pick = np.argmin(np.where(prey, dist, 10**6), axis=1)
        chasing = fed & ~has_target & prey[np.arange(batch.n), chase_pick]
        safe = self.allowed
        if chasing.any():
            closer = _closest_move(batch, ent[np.arange(batch.n), chase_pick], safe, self.rng)
            moves = np.where(chasing, closer, moves)
        fleeing = threat.any(axis=1)
        if fleeing.any():
            agents = np.flatnonzero(fleeing)
            worst = np.argmin(np.where(threat[agents], dist[agents], 10**6), axis=1)
            moves[agents] = self.flee(batch, agents, ent[agents, worst, EntityAttr.ROW],
                                      ent[agents, worst, EntityAttr.COL], safe[agents])
        return to_rows(batch, moves, styles, targets)


class CombatNoExplore(Combat):
    """Combat without exploration trips."""

    explore = False


def _closest_move(batch: Batch, target_rows: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The allowed move that ends nearest (L1) to each agent's target entity."""
    me = batch.me
    nr = me[:, EntityAttr.ROW][:, None] + DELTAS[:, 0]
    nc = me[:, EntityAttr.COL][:, None] + DELTAS[:, 1]
    gap = np.abs(nr - target_rows[:, None, EntityAttr.ROW]) + np.abs(nc - target_rows[:, None, EntityAttr.COL])
    gap = gap + rng.random(gap.shape) * 0.1
    return np.argmin(np.where(allowed, gap, np.inf), axis=1)
