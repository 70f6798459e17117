"""Scripted task follower: does what its task asks, reading the task only from its observation.

`Follower` is Combat (a pooled team map, foraging errands, fights with weaker entities, flight from
stronger aggressors) with the time Combat would spend exploring or waiting by the water given to
its task, as the minigame bots give it to their game (`scripted.games.GameBot`). Each agent decodes
the ``Task`` embedding of its observation (`scripted.directive.read`; version 2, the default) and:

- attacks only with the style its task names (ScoreHit, AttainSkill or GainExperience of Melee,
  Range or Mage; a HIT_MELEE ... count), closing to that style's reach;
- hunts what its task names (DefeatEntity's agent type and least level; HIT_NPC, HIT_PLAYER, kill
  counts; any entity for a style's hits), walking to the nearest such entity it sees when it has
  food and water to spare, and spares players when its task says not to hit them;
- walks to the place its task names (OccupyTile, SeizeTile and its centre variants, NearTile,
  ProgressTowardCenter) when it has no errand or can get there before it starves (`scripted.games.Racer`'s
  rule), and stays there;
- eats or drinks on its task's account (EAT_FOOD and DRINK_WATER counts, Hunting and Fishing
  levels): an eater walks to fresh forests when it has nothing else to do and does not wait by the
  water; a drinker waits by the water and keeps off forests until it must eat.

Given another agent's task (``nmmo eval ... --task-input shuffled``) the same bot is its own blind
twin: it pursues the task it reads, and is scored on its own.
"""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Direction, EntityAttr, Material, NPCType, Style
from nmmo.core.layout import ObsBatch
from nmmo.core.rules import STEPS, chebyshev, reaches
from scripted.core import Batch, batch_of
from scripted.directive import DRINK, EAT, NONE, NPC, PLAYER, Directive, read
from scripted.games import GameBot
from scripted.memory import AgentBook
from scripted.plan import Plan, Planner

__all__ = ["Follower"]


class Follower(GameBot):
    """Pursues the task its observation's embedding names (see the module notes)."""

    safe_danger, inner_penalty = Planner.safe_danger, Planner.inner_penalty  # the open world's home band
    explore = True  # an agent whose task asks nothing it can do explores, as Combat
    #: Food and water to spare (each) before an agent hunts beyond its reach.
    hunt_margin = 5
    #: Food and water (each) with which an agent keeps walking to its task's place, errand or not:
    #: with ten of each at most, one that walks only when it has nothing else to do turns back to
    #: the sources it knows before it gets far.
    goal_margin = 5

    def __init__(self, config: Config, seed: int | None = None) -> None:
        super().__init__(config, seed)
        self._read: dict[bytes, Directive] = {}
        self.plan_: Plan | None = None

    def act_arrays(self, batch: ObsBatch) -> np.ndarray:
        if batch.n == 0:
            return np.zeros((0, 3), dtype=np.int64)
        task = batch.arrays.get("task")
        if task is None:
            raise ValueError("scripted:Follower follows the task in its observation: play it with tasks "
                             "(nmmo eval --tasks SET, or a config with TASKS)")
        self.asks = [self._directive(row) for row in task]
        return self.decide(batch_of(batch))

    def _directive(self, row: np.ndarray) -> Directive:
        key = row.tobytes()
        if key not in self._read:
            self._read[key] = read(row, self.config)
        return self._read[key]

    def plan(self, batch: Batch) -> Plan:
        """Planner's plan, kept for the task's moves (and the tiles beside known water)."""
        self.plan_ = super().plan(batch)
        self._beside_water = self.memory.next_to(Material.WATER)
        return self.plan_

    def decide(self, batch: Batch) -> np.ndarray:
        asks = self.asks
        style = np.array([a.style for a in asks])
        prey = np.array([a.prey for a in asks])
        spare = np.array([a.spare_players or a.prey == NPC for a in asks])
        rows = super().decide(batch)  # Combat: errands, fights with weaker entities, flight
        me, ent = batch.me, batch.entity
        is_player = ent[:, :, EntityAttr.NPC_TYPE] == NPCType.PLAYER
        target = np.clip(rows[:, 2], 0, ent.shape[1] - 1)
        hits_player = (rows[:, 2] >= 0) & is_player[np.arange(batch.n), target]
        cancel = (spare & hits_player) | ((style >= 0) & (rows[:, 2] >= 0))
        rows[cancel, 1:] = -1
        free = self.idle(batch)
        fed = np.minimum(me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]) >= self.hunt_margin
        fleeing = self.plan_.in_zone
        self._gather(batch, rows, free & ~fleeing)
        self._go(batch, rows, free, fed, fleeing)
        self._hunt(batch, rows, prey, style, spare, fed & ~fleeing)
        return rows

    # ---------------------------------------------------------------- the task's asks
    def _go(self, batch: Batch, rows: np.ndarray, free: np.ndarray, fed: np.ndarray, fleeing: np.ndarray) -> None:
        """Agents whose task names a place walk there when free or when they can make it before
        they starve (one search per place), and stay once there while fed."""
        me, reach = batch.me, self.reach(batch)
        places: dict[tuple[int, int, int], list[int]] = {}
        for k, ask in enumerate(self.asks):
            if ask.goal is not None and not fleeing[k]:
                places.setdefault((*ask.goal, ask.radius), []).append(k)
        for (row, col, radius), agents in places.items():
            agents = np.array(agents)
            far = chebyshev(me[agents, EntityAttr.ROW], me[agents, EntityAttr.COL], row, col)
            there = far <= radius
            rows[agents[there & free[agents] & fed[agents]], 0] = Direction.STAY
            supplies = np.minimum(me[agents, EntityAttr.FOOD], me[agents, EntityAttr.WATER])
            going = agents[~there & (free[agents] | (far <= reach[agents]) | (supplies >= self.goal_margin))]
            if going.size:
                who = np.zeros(batch.n, dtype=bool)
                who[going] = True
                self.walk(batch, rows, who, self._area(row, col, radius))

    def _area(self, row: int, col: int, radius: int) -> np.ndarray:
        """Flat tiles within Chebyshev `radius` of (row, col), on the map."""
        span = np.arange(-radius, radius + 1)
        r = np.clip(row + span, 0, self.size - 1)
        c = np.clip(col + span, 0, self.size - 1)
        return np.unique(r[:, None] * self.size + c[None, :])

    def _gather(self, batch: Batch, rows: np.ndarray, free: np.ndarray) -> None:
        """Eaters walk to fresh forests when free; drinkers wait by the water and keep off forests."""
        p = self.plan_
        gather = np.array([a.gather for a in self.asks])
        avoid = np.array([a.avoid for a in self.asks])
        goal = self.book.goal[p.ids]
        eaters = np.flatnonzero(free & (gather == EAT) & p.known_f)
        if eaters.size:
            rows[eaters, 0] = self._downhill(self._values(p.dist_f, p.here[eaters]), p.allowed[eaters])
        drinkers = np.flatnonzero(free & ((gather == DRINK) | (avoid == EAT)) & p.known_w & (avoid != DRINK))
        if drinkers.size:
            at = p.at_water[drinkers]
            moves = self._downhill(self._values(p.dist_w, p.here[drinkers]), p.allowed[drinkers])
            rows[drinkers, 0] = np.where(at, Direction.STAY, moves)
        # keep off what the task says not to gather (a forest eats when stepped on; a tile beside
        # water drinks), unless on an errand for it
        r = batch.radius
        forest = batch.material[:, r + STEPS[:, 0], r + STEPS[:, 1]] == Material.FOREST
        beside = self._beside_water[p.here[:, None] + self.offsets]
        off = np.where((avoid == EAT)[:, None], forest, False) | np.where((avoid == DRINK)[:, None], beside, False)
        off &= ((avoid == EAT) & (goal != AgentBook.FOOD) | (avoid == DRINK) & (goal != AgentBook.WATER))[:, None]
        step = np.clip(rows[:, 0], 0, 3)
        blocked = (rows[:, 0] < Direction.STAY) & off[np.arange(batch.n), step]
        if blocked.any():
            options = np.where(p.allowed[blocked, :4] & ~off[blocked], self.rng.random((int(blocked.sum()), 4)), -1.0)
            rows[blocked, 0] = np.where(options.max(axis=1) >= 0, np.argmax(options, axis=1), Direction.STAY)

    def _hunt(self, batch: Batch, rows: np.ndarray, prey: np.ndarray, style: np.ndarray, spare: np.ndarray,
              fed: np.ndarray) -> None:
        """Strike the task's prey in reach of the task's style (none named: range, else mage where
        only it reaches); fed hunters with none in reach walk to the nearest they see, one search per
        kind of prey."""
        ent, me = batch.entity, batch.me
        seen = ent[:, :, EntityAttr.ID] != 0
        seen[:, 0] = False
        kind = ent[:, :, EntityAttr.NPC_TYPE]
        is_player = kind == NPCType.PLAYER
        level = np.array([a.prey_level for a in self.asks])
        their, mine = ent[:, :, EntityAttr.COMBAT_LEVEL], me[:, None, EntityAttr.COMBAT_LEVEL]
        # NPCs that do not fight back (passive) or that it outranks; players only when its task
        # hunts them: a population whose every hunter hits the players in sight kills itself off
        npc = ~is_player & ((kind == NPCType.PASSIVE) | (their < mine))
        wanted = seen & (their >= level[:, None]) & np.where((prey == PLAYER)[:, None], is_player, npc)
        wanted &= ~(spare[:, None] & is_player)
        wanted &= (prey != NONE)[:, None] | (style >= 0)[:, None]
        dist = chebyshev(ent[:, :, EntityAttr.ROW], ent[:, :, EntityAttr.COL], me[:, None, EntityAttr.ROW],
                         me[:, None, EntityAttr.COL])
        reach = reaches(self.config)
        # no style asked: range where it reaches (a passive NPC flees a melee hunter), then mage
        free_style = np.select([dist <= reach[Style.RANGE], dist <= reach[Style.MAGE]], [Style.RANGE, Style.MAGE], -1)
        styles = np.where((style >= 0)[:, None], style[:, None], free_style)
        in_reach = wanted & (dist <= reach[np.clip(styles, 0, 2)]) & (styles >= 0)
        in_reach &= np.take_along_axis(batch.style_mask, np.clip(styles, 0, 2), axis=1)
        in_reach &= batch.target_mask[:, : ent.shape[1]]
        # int64: a Python int beside int32 arrays would wrap to -1 (numpy 2 keeps the array's dtype)
        score = np.where(in_reach, ent[:, :, EntityAttr.HEALTH].astype(np.int64) * 100 + dist, np.iinfo(np.int64).max)
        pick = np.argmin(score, axis=1)
        strike = in_reach[np.arange(batch.n), pick]
        rows[strike, 1], rows[strike, 2] = styles[np.arange(batch.n), pick][strike], pick[strike]
        chasing = fed & ~strike & wanted.any(axis=1) & (self.book.goal[np.asarray(batch.ids)] == AgentBook.NONE)
        chasing &= np.array([a.goal is None for a in self.asks])  # a place comes first: hunt there
        kinds = sorted({(int(p), int(lv), bool(sp)) for p, lv, sp in zip(prey[chasing], level[chasing], spare[chasing],
                                                                           strict=True)})
        for key in kinds:
            who = chasing & (prey == key[0]) & (level == key[1]) & (spare == key[2])
            self.walk(batch, rows, who, self.seen_tiles(batch, wanted, who))
