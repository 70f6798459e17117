"""The scripted baselines of the Neural MMO paper, vectorized over the agents they control.

- Meander: a random move onto safe walkable terrain (never lava, never blocked).
- Forage: when food or water would drop below a margin on the way to its nearest visible source
  (shortest walking paths over the visible tiles, by breadth-first search), goes for the scarcer
  of the two; otherwise explores toward the map centre; plans around hostile and neutral NPCs;
  does not model other agents.
- Combat: Forage's resource logic, plus it sizes up visible entities by combat level and health,
  attacks weaker ones with the style that reaches them (melee, then range, then mage), chases
  weaker ones when fed, and flees stronger aggressors.
- ForageNoExplore / CombatNoExplore: the paper's "No Explore" variants (no trip toward the centre;
  a sated agent waits, wandering only when it stands away from water).
"""

from __future__ import annotations

import abc

import numpy as np

from nmmo.config import Config
from nmmo.enums import EntityAttr, Material, NPCType, Style
from scripted.core import (
    NOT_FOUND,
    Batch,
    nearest,
    passable,
    random_choice,
    safe_moves,
    stack,
    step_away,
    step_towards,
    to_actions,
    walk_distances,
)


class Scripted(abc.ABC):
    """Base: config, an injected RNG, `reset(seed)`, and the stacking of observations."""

    def __init__(self, config: Config, seed: int | None = None) -> None:
        self.config = config
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observations: dict[int, dict]) -> dict[int, dict]:
        if not observations:
            return {}
        return self.decide(stack(observations))

    @abc.abstractmethod
    def decide(self, batch: Batch) -> dict[int, dict]:
        """Actions for every agent of the batch (each bot defines its decision)."""


class Meander(Scripted):
    """Random safe moves."""

    def decide(self, batch: Batch) -> dict[int, dict]:
        return to_actions(batch, random_choice(safe_moves(batch), self.rng))


class Forage(Scripted):
    """Keeps food and water up with shortest paths over the visible tiles; explores when sated."""

    explore = True
    #: Forage again when food or water would be below this on arrival at its source.
    sated = 6
    #: How far (Chebyshev) from a hostile or neutral NPC path planning keeps.
    npc_berth = 1
    #: Longest path planned, in steps (a full food bar lasts 10 ticks at the start).
    plan_steps = 16

    def decide(self, batch: Batch) -> dict[int, dict]:
        return to_actions(batch, self.forage_moves(batch))

    def forage_moves(self, batch: Batch) -> np.ndarray:
        free = passable(batch) & ~self._near_npcs(batch)
        r = batch.radius
        free[:, r, r] = True
        dist = walk_distances(free, self.plan_steps)
        food_goal = (batch.material == Material.FOREST) & free
        water_goal = free & _next_to_water(batch.material)
        food_at, food_d = nearest(dist, food_goal, self.rng)
        water_at, water_d = nearest(dist, water_goal, self.rng)
        food = batch.me[:, EntityAttr.FOOD].astype(np.int64)
        water = batch.me[:, EntityAttr.WATER].astype(np.int64)
        # The scarcer resource first (ties: the nearer). Deciding on amounts rather than on
        # amount-minus-distance keeps the choice stable while walking between two sources.
        want_water = (water < food) | ((water == food) & (water_d <= food_d))
        needy = np.minimum(food - food_d, water - water_d) < self.sated
        have_food, have_water = food_d < NOT_FOUND, water_d < NOT_FOUND
        # go for the scarcer resource; if it is out of sight, the other one
        go_water = np.where(want_water, have_water, ~have_food & have_water)
        goal = np.where(go_water, water_at, food_at)
        has_goal = needy & (have_food | have_water)
        moves = step_towards(dist, goal, has_goal)

        idle = ~has_goal
        if self.explore:
            explore_at, reachable = self._explore_goal(batch, dist)
            moves = np.where(idle & reachable, step_towards(dist, explore_at, idle & reachable), moves)
            idle &= ~reachable
        wander = random_choice(safe_moves(batch), self.rng)
        stay_put = idle & (water_d == 0)  # sated next to water: stay and drink
        return np.where(idle & ~stay_put, wander, moves)

    def _explore_goal(self, batch: Batch, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The reachable tile closest to the map centre, if it is closer than where the agent is."""
        centre = self.config.MAP_BORDER + self.config.MAP_CENTER // 2
        to_centre = np.abs(batch.rows.astype(np.int64) - centre) + np.abs(batch.cols.astype(np.int64) - centre)
        n = batch.n
        score = np.where(dist >= 0, to_centre, 10**6).reshape(n, -1) + self.rng.random((n, dist[0].size)) * 0.5
        best = np.argmin(score, axis=1)
        r = batch.radius
        here = to_centre[:, r, r]
        reachable = to_centre.reshape(n, -1)[np.arange(n), best] < here
        return best, reachable

    def _near_npcs(self, batch: Batch) -> np.ndarray:
        """Window tiles within `npc_berth` of a visible hostile or neutral NPC."""
        n, side = batch.n, batch.material.shape[1]
        ent = batch.entity
        kind = ent[:, :, EntityAttr.NPC_TYPE]
        danger = (kind == NPCType.HOSTILE) | (kind == NPCType.NEUTRAL)
        agent, row = np.nonzero(danger)
        out = np.zeros((n, side, side), dtype=bool)
        if agent.size == 0:
            return out
        me = batch.me
        wr = ent[agent, row, EntityAttr.ROW] - me[agent, EntityAttr.ROW] + batch.radius
        wc = ent[agent, row, EntityAttr.COL] - me[agent, EntityAttr.COL] + batch.radius
        for dr in range(-self.npc_berth, self.npc_berth + 1):
            for dc in range(-self.npc_berth, self.npc_berth + 1):
                rr, cc = wr + dr, wc + dc
                ok = (rr >= 0) & (rr < side) & (cc >= 0) & (cc < side)
                out[agent[ok], rr[ok], cc[ok]] = True
        return out


class ForageNoExplore(Forage):
    """Forage without the trip toward the map centre."""

    explore = False


class Combat(Forage):
    """Forage plus fighting: attack weaker entities, chase them when fed, flee stronger aggressors."""

    #: A threat this close (Chebyshev) makes the agent flee.
    flee_radius = 3
    #: How much more health than an equal-level opponent counts as an edge worth attacking.
    health_edge = 3

    def decide(self, batch: Batch) -> dict[int, dict]:
        if not self.config.has("Combat"):  # nothing to fight with: forage
            return super().decide(batch)
        moves = self.forage_moves(batch)
        ent, me = batch.entity, batch.me
        n_obs = ent.shape[1]
        seen = ent[:, :, EntityAttr.ID] != 0
        seen[:, 0] = False
        dist = np.maximum(np.abs(ent[:, :, EntityAttr.ROW] - me[:, None, EntityAttr.ROW]),
                          np.abs(ent[:, :, EntityAttr.COL] - me[:, None, EntityAttr.COL]))
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
        reach = np.array([self.config.COMBAT_MELEE_REACH, self.config.COMBAT_RANGE_REACH,
                          self.config.COMBAT_MAGE_REACH])
        style = np.select([dist <= reach[Style.MELEE], dist <= reach[Style.RANGE], dist <= reach[Style.MAGE]],
                          [Style.MELEE, Style.RANGE, Style.MAGE], -1)
        allowed_style = np.take_along_axis(batch.style_mask, np.clip(style, 0, 2), axis=1) & (style >= 0)
        attackable = weaker & batch.target_mask[:, :n_obs] & allowed_style
        pick = np.argmin(np.where(attackable, dist, 10**6), axis=1)
        has_target = attackable[np.arange(batch.n), pick]
        styles = np.where(has_target, style[np.arange(batch.n), pick], 0)
        targets = np.where(has_target, pick, -1)

        # Chase the nearest weaker entity out of reach when fed; flee threats (overrides all moves).
        fed = np.minimum(me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]) >= self.sated
        prey = weaker & ~attackable
        chase_pick = np.argmin(np.where(prey, dist, 10**6), axis=1)
        chasing = fed & ~has_target & prey[np.arange(batch.n), chase_pick]
        safe = safe_moves(batch)
        if chasing.any():
            closer = _closest_move(batch, ent[np.arange(batch.n), chase_pick], safe, self.rng)
            moves = np.where(chasing, closer, moves)
        fleeing = threat.any(axis=1)
        if fleeing.any():
            worst = np.argmin(np.where(threat, dist, 10**6), axis=1)
            away = step_away(batch, ent[np.arange(batch.n), worst, EntityAttr.ROW],
                             ent[np.arange(batch.n), worst, EntityAttr.COL], safe, self.rng)
            moves = np.where(fleeing, away, moves)
        return to_actions(batch, moves, styles, targets)


class CombatNoExplore(Combat):
    """Combat without the trip toward the map centre."""

    explore = False


def _next_to_water(material: np.ndarray) -> np.ndarray:
    water = material == Material.WATER
    near = np.zeros_like(water)
    near[:, 1:] |= water[:, :-1]
    near[:, :-1] |= water[:, 1:]
    near[:, :, 1:] |= water[:, :, :-1]
    near[:, :, :-1] |= water[:, :, 1:]
    return near


def _closest_move(batch: Batch, target_rows: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The allowed move that ends nearest (L1) to each agent's target entity."""
    me = batch.me
    deltas = np.array([[-1, 0], [1, 0], [0, 1], [0, -1], [0, 0]])
    nr = me[:, EntityAttr.ROW][:, None] + deltas[:, 0]
    nc = me[:, EntityAttr.COL][:, None] + deltas[:, 1]
    gap = np.abs(nr - target_rows[:, None, EntityAttr.ROW]) + np.abs(nc - target_rows[:, None, EntityAttr.COL])
    gap = gap + rng.random(gap.shape) * 0.1
    return np.argmin(np.where(allowed, gap, np.inf), axis=1)
