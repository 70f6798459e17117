"""Scripted team bots for the minigames (`nmmo.games`), one per game: the yardsticks a learned policy
is measured against (``nmmo tournament --game NAME`` anchors its ratings on the game's bot,
`GAME_BOTS`).

Every bot is `Combat` (a pooled team map, foraging errands, fights with weaker entities, flight from
stronger aggressors) with the time Combat would spend exploring or waiting by the water given to
the game instead: an agent that must eat or drink still goes to do so first (Forage's errands). The
bots read only the observations: an agent's own Entity row gives its ID, TEAM, position and
supplies; the other rows what it sees; the map centre is ``MAP_SIZE // 2``; the game's rules come
from the config. A policy may control several teams at once: "team" below is the TEAM column.

The king convention (protect the king): a team's king is its first slot, and without respawns agent
ids are slot + 1, so the king is the agent whose ``ID - 1 == TEAM * PLAYER_TEAM_SIZE``: each agent can
tell from an Entity row whether that row is a king, its own or a foe's.
"""

from __future__ import annotations

import numpy as np

from nmmo.core.enums import Direction, EntityAttr, NPCType, Style
from nmmo.core.rules import chebyshev, reaches
from nmmo.games.battle import FOG_TICKS_PER_TILE
from scripted.bots import Combat
from scripted.core import Batch
from scripted.memory import UNKNOWN, AgentBook, MapMemory, closed_border, distance_field

__all__ = ["GAME_BOTS", "Battler", "GameBot", "Guard", "Hill", "Racer", "Survivor"]

#: The scripted bot of each game (its policy spec): `nmmo tournament --game NAME`'s anchor.
GAME_BOTS = {"race_to_centre": "scripted:Racer", "king_of_the_hill": "scripted:Hill",
             "team_battle": "scripted:Battler", "protect_the_king": "scripted:Guard", "sandwich": "scripted:Survivor"}


class GameBot(Combat):
    """Base of the game bots: Combat on a small map (the whole of it is home: no outer band), plus
    the moves and strikes the games share (`walk`, `strike`, `foes`)."""

    safe_danger, inner_penalty = 2.0, 0
    explore = False  # a sated agent plays the game instead
    #: Food and water (and unseen ground) count this many steps farther per tile (Chebyshev) from
    #: the map's centre: agents forage ever nearer to it (0: no pull).
    pull = 0.0

    def __init__(self, config, seed: int | None = None) -> None:
        super().__init__(config, seed)
        index, centre = np.arange(self.size), config.MAP_SIZE // 2
        self.ring = np.maximum(np.abs(index[:, None] - centre), np.abs(index[None, :] - centre)).ravel()

    def sources(self, tiers: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Planner's sources, those far from the centre counting farther (`pull`)."""
        src, heads = super().sources(tiers)
        return src, heads + np.rint(self.pull * self.ring[src]).astype(np.int64)

    def idle(self, batch: Batch) -> np.ndarray:
        """Agents with no foraging errand (free to play the game)."""
        return self.book.goal[np.asarray(batch.ids)] == AgentBook.NONE

    def reach(self, batch: Batch) -> np.ndarray:
        """Steps each agent can walk before it dies of hunger or thirst (2 health a tick at zero)."""
        me = batch.me
        return np.minimum(me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]) + (me[:, EntityAttr.HEALTH] - 1) // 2

    def here(self, batch: Batch) -> np.ndarray:
        return batch.me[:, EntityAttr.ROW].astype(np.int64) * self.size + batch.me[:, EntityAttr.COL]

    def walk(self, batch: Batch, rows: np.ndarray, who: np.ndarray, sources: np.ndarray) -> None:
        """Agents `who` (bool) step along a shortest path to the nearest of the flat tiles `sources`
        over the team map (known walkable ground and unseen playable ground, around occupied tiles);
        a blocked step sidesteps or waits. Writes their moves into `rows`."""
        agents = np.flatnonzero(who)
        if not agents.size or not sources.size:
            return
        mem, size = self.memory, self.size
        ground = MapMemory.walkable(mem) | ((mem.material.ravel() == UNKNOWN) & self.playable.ravel())
        sources = np.unique(sources[ground[sources]])
        open_ = ground & ~mem.occupied
        here = self.here(batch)
        open_[here[agents]] = open_[sources] = True
        field = distance_field(closed_border(open_, size), sources, np.zeros(sources.size, np.int64), size,
                               here[agents], self.plan_limit)
        moves = self._downhill(self._values(field, here[agents]), self.allowed[agents])
        rows[agents, 0] = np.where(batch.move_mask[agents, moves], moves, Direction.STAY)

    def foes(self, batch: Batch) -> np.ndarray:
        """(n, N_OBS) bool: the players of other teams each agent sees."""
        ent = batch.entity
        seen = (ent[:, :, EntityAttr.ID] != 0) & (ent[:, :, EntityAttr.NPC_TYPE] == NPCType.PLAYER)
        seen[:, 0] = False
        return seen & (ent[:, :, EntityAttr.TEAM] != batch.me[:, None, EntityAttr.TEAM])

    def strike(self, batch: Batch, rows: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Each agent with one of its `targets` (n, N_OBS bool) in reach attacks the one with the least
        health (then the nearest), with the first style that reaches it (melee, range, mage); returns
        who struck. Without the Combat system nobody strikes, so every bot plays every game."""
        if not self.config.has("Combat"):  # a game without combat (race to the centre): nothing strikes
            return np.zeros(batch.n, dtype=bool)
        ent, me = batch.entity, batch.me
        dist = chebyshev(ent[:, :, EntityAttr.ROW], ent[:, :, EntityAttr.COL], me[:, None, EntityAttr.ROW],
                         me[:, None, EntityAttr.COL])
        reach = reaches(self.config)
        style = np.select([dist <= reach[s] for s in Style], list(Style), -1)
        ok = np.take_along_axis(batch.style_mask, np.clip(style, 0, 2), axis=1) & (style >= 0)
        ok &= targets & batch.target_mask[:, : ent.shape[1]]
        # int64 throughout: numpy 2 keeps an int32 array's dtype beside a Python int, and the
        # sentinel (int64 max) would wrap to -1 and win the argmin.
        score = np.where(ok, ent[:, :, EntityAttr.HEALTH].astype(np.int64) * 100 + dist, np.iinfo(np.int64).max)
        pick = np.argmin(score, axis=1)
        struck = ok[np.arange(batch.n), pick]
        rows[struck, 1], rows[struck, 2] = style[np.arange(batch.n), pick][struck], pick[struck]
        return struck

    def seen_tiles(self, batch: Batch, mask: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """Flat tiles of the entities `mask` (n, N_OBS) marks in the views of `agents` (bool)."""
        ent = batch.entity[agents]
        pick = mask[agents]
        return ent[:, :, EntityAttr.ROW][pick].astype(np.int64) * self.size + ent[:, :, EntityAttr.COL][pick]

    def is_king(self, ent: np.ndarray) -> np.ndarray:
        """Whether Entity rows are kings (the module's king convention)."""
        return (ent[..., EntityAttr.ID] - 1 == ent[..., EntityAttr.TEAM] * self.config.PLAYER_TEAM_SIZE) & (
            ent[..., EntityAttr.NPC_TYPE] == NPCType.PLAYER) & (ent[..., EntityAttr.ID] > 0)


class Racer(GameBot):
    """race_to_centre: every agent walks to the centre tile (the first team on it wins) when it has
    no foraging errand, or on an errand when it has the food, water and health to get there before
    it would starve (its L1 distance, a lower bound on the path, within `reach`); otherwise it eats
    and drinks first, as Forage does, at the sources nearest to the centre (`pull`)."""

    pull = 0.5

    def decide(self, batch: Batch) -> np.ndarray:
        rows = super().decide(batch)
        me, centre = batch.me, self.config.MAP_SIZE // 2
        far = np.abs(me[:, EntityAttr.ROW] - centre) + np.abs(me[:, EntityAttr.COL] - centre)
        self.walk(batch, rows, self.idle(batch) | (far <= self.reach(batch)), np.array([centre * self.size + centre]))
        return rows


class Hill(Racer):
    """king_of_the_hill: Racer's moves, so free agents gather on and around the centre (the first
    stands on it: holding the centre needs a team's player to step on it, and standing there keeps
    others off; the rest crowd its neighbours, blocking the way in); every agent strikes the weakest
    foe in reach, else what Combat would strike."""

    def decide(self, batch: Batch) -> np.ndarray:
        rows = super().decide(batch)
        self.strike(batch, rows, self.foes(batch))
        return rows


class Battler(GameBot):
    """team_battle: strikes the weakest foe in reach (else what Combat would strike); when fed
    (`hunt_margin` ticks of food and water to spare) it walks toward the nearest foe its team sees;
    a free agent with no foe in sight keeps with its team (walks back when farther than `together`
    from its team's mean position); a hungry or thirsty one forages and flees stronger aggressors as Combat."""

    hunt_margin, together = 8, 2

    def decide(self, batch: Batch) -> np.ndarray:
        rows = super().decide(batch)
        foes, me = self.foes(batch), batch.me
        self.strike(batch, rows, foes)
        fed = np.minimum(me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]) >= self.hunt_margin
        idle = self.idle(batch)
        for team in np.unique(me[:, EntityAttr.TEAM]):
            mine = me[:, EntityAttr.TEAM] == team
            seen = self.seen_tiles(batch, foes, mine)
            hunting = mine & fed & (seen.size > 0)
            self.walk(batch, rows, hunting, seen)
            row, col = np.rint(me[mine, EntityAttr.ROW].mean()), np.rint(me[mine, EntityAttr.COL].mean())
            apart = chebyshev(me[:, EntityAttr.ROW], me[:, EntityAttr.COL], row, col) > self.together
            self.walk(batch, rows, mine & idle & ~hunting & apart, np.array([int(row) * self.size + int(col)]))
        return rows


class Guard(GameBot):
    """protect_the_king (kings by the module's convention): strikes a foe king in reach first, else
    the weakest foe in reach. The king forages as Combat and walks away from any foe within
    `king_berth`. Members rush foes their team sees within `guard_radius` of their king; with none
    there, fed members (`hunt_margin` ticks of food and water to spare) hunt a foe king within
    `hunt_radius` of them, and free ones keep within `escort` of their king."""

    guard_radius, king_berth, escort, hunt_margin, hunt_radius = 2, 3, 2, 8, 4

    def decide(self, batch: Batch) -> np.ndarray:
        rows = super().decide(batch)
        ent, me, size = batch.entity, batch.me, self.size
        foes, king = self.foes(batch), self.is_king(me)
        self.strike(batch, rows, foes)
        self.strike(batch, rows, foes & self.is_king(ent))
        fed = np.minimum(me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]) >= self.hunt_margin
        idle = self.idle(batch)
        for team in np.unique(me[:, EntityAttr.TEAM]):
            mine = me[:, EntityAttr.TEAM] == team
            kings = np.flatnonzero(mine & king)
            if not kings.size:
                continue  # its king is gone (the team is out) or not among this policy's agents
            k = kings[:1]
            kr, kc = int(me[k[0], EntityAttr.ROW]), int(me[k[0], EntityAttr.COL])
            seen = self.seen_tiles(batch, foes, mine)
            gap = chebyshev(seen // size, seen % size, kr, kc)
            members = mine & ~king
            if gap.size and gap.min() <= self.guard_radius:
                self.walk(batch, rows, members, seen[gap <= self.guard_radius])
                if gap.min() <= self.king_berth:
                    near = seen[np.argmin(gap)]
                    rows[k, 0] = self.flee(batch, k, np.array([near // size]), np.array([near % size]), self.allowed[k])
                continue
            targets = self.seen_tiles(batch, foes & self.is_king(ent), mine)
            near = chebyshev(me[:, None, EntityAttr.ROW], me[:, None, EntityAttr.COL], targets[None] // size,
                             targets[None] % size).min(axis=1, initial=10**6) <= self.hunt_radius
            hunting = members & fed & near
            self.walk(batch, rows, hunting, targets)
            away = chebyshev(me[:, EntityAttr.ROW], me[:, EntityAttr.COL], kr, kc) > self.escort
            self.walk(batch, rows, members & idle & ~hunting & away, np.array([kr * size + kc]))
        return rows


class FoggedMemory(MapMemory):
    """The team map with the tiles the fog will cover closed (`safe`: flat bool), so foraging plans
    stay inside the fog's line."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.safe = np.ones(size * size, dtype=bool)

    def walkable(self) -> np.ndarray:
        return super().walkable() & self.safe


class Survivor(GameBot):
    """sandwich: keeps inside the line the fog will have reached `lookahead` ticks on (the game's
    rule from the config: `radius`), walking inward when outside it; foraging plans and moves stay
    inside it (a fogged map, `FoggedMemory`) and favour the sources nearest to the centre (`pull`).
    It strikes the weakest foe in reach, else what Combat would strike (weaker NPCs), and keeps a
    smaller berth from hostile NPCs than Combat (the fog crowds everybody together)."""

    lookahead, hostile_berth, pull = 2 * FOG_TICKS_PER_TILE, 3, 0.5

    def __init__(self, config, seed: int | None = None) -> None:
        super().__init__(config, seed)
        self.memory = FoggedMemory(self.size)

    def radius(self, tick: int) -> int:
        """The fog-free Chebyshev radius around the centre at `tick` (`nmmo.games.battle.Sandwich`)."""
        config, start = self.config, self.config.MAP_CENTER // 2
        if tick < config.GAME_FOG_ONSET:
            return start
        return max(config.GAME_FOG_FINAL, start - (tick - config.GAME_FOG_ONSET) // FOG_TICKS_PER_TILE)

    def decide(self, batch: Batch) -> np.ndarray:
        tick = int(batch.me[:, EntityAttr.TIME_ALIVE].max(initial=0))  # no respawns: time alive is the tick
        inside = self.memory.safe = self.ring <= self.radius(tick + self.lookahead)
        rows = super().decide(batch)
        self.strike(batch, rows, self.foes(batch))
        self.walk(batch, rows, ~inside[self.here(batch)], np.flatnonzero(inside))
        return rows

    def safe_moves(self, batch: Batch, here: np.ndarray, zone: np.ndarray, in_zone: np.ndarray) -> np.ndarray:
        """Planner's safe moves, and none out of the fog's line from inside it."""
        allowed = super().safe_moves(batch, here, zone, in_zone)
        safe = self.memory.safe
        allowed[:, :4] &= safe[here[:, None] + self.offsets] | ~safe[here][:, None]
        return allowed
