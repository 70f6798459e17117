"""Scripted Forage: keeps food and water up from a remembered map, explores only as far as it can
safely come back from, and keeps away from lava and hostile NPCs. It never fights.

The policy pools what all its agents see into one map (`scripted.memory.MapMemory`), like a team
sharing a map, and plans over it for all agents at once (`scripted.plan.Planner`): distance fields
to the nearest food and water, and to each by way of the other.

1. Errands. An agent's slack for a resource is its amount minus the walking distance to the
   nearest source. Of the two plans "food, then water" and "water, then food" it rates each by
   its worst moment (the paper's min-max; when both run something out, by the health they cost)
   and, once the better plan leaves less than `margin`, commits to its first leg until done (it
   stands on a forest, or next to water). Committing, rather than re-deciding each tick, stops
   agents oscillating between a forest and a lake two steps apart. With enough to spare it walks
   to the source from which the other resource is nearest (the via fields), so agents drift to
   places where forest and water are close; it tops up the other resource when it passes within
   `top_up` steps of it; two agents bound for one forest leave it to the nearer.
2. A resource with no known path to it: across unseen ground toward a remembered source (a
   respawn on unexplored ground uses what its team has seen), else toward the nearest unseen
   ground in the band, where there is the most of it.
3. A sated agent explores (Forage; not the NoExplore variants): toward the tile of its view
   farthest (L1) from its spawn, the Explore metric, but only to a tile from which both plans
   would still leave `margin`, over tiles already seen: exploring never costs the agent its life.
   Otherwise it waits by the water nearest to a grove (drinking trains Fishing), off forests
   (stepping on one eats it).
4. It never steps onto lava, and flees hostile NPCs (and anything that hits it) that come within
   `hostile_berth`, toward its errand when it can; it avoids their haunts. It does not model
   other agents beyond sharing forests and stepping around them: occupied tiles are no sources,
   crowded ones count farther, and a blocked step goes round or waits.
"""

from __future__ import annotations

import numpy as np

from nmmo.core.enums import Direction, EntityAttr, Material
from nmmo.core.rules import DELTAS, STEPS, WALKABLE, chebyshev
from scripted.core import Batch, step_towards, to_rows, walk_distances
from scripted.memory import distance_field
from scripted.plan import FAR, AgentBook, Plan, Planner

FOOD, WATER = AgentBook.FOOD, AgentBook.WATER
#: Value of a move that leads nowhere useful (lower values are better).
NOWHERE = float(FAR)


class Forage(Planner):
    """Forages from a pooled map memory and explores within a safe return range; never fights."""

    explore = True
    #: Start an errand when the better plan's worst moment leaves less than this.
    margin = 4
    #: Explore only when both plans leave at least this.
    explore_margin = 6
    #: Detour this many steps for a drink or a meal on the way.
    top_up = 2
    #: Set to a list to record each tick's per-agent decisions (for debugging and death traces).
    trace: list[dict] | None = None

    def decide(self, batch: Batch) -> np.ndarray:
        return to_rows(batch, self.forage_moves(batch))

    def forage_moves(self, batch: Batch) -> np.ndarray:
        """One move per agent (see the module docstring); also sets `self.allowed`."""
        p = self.plan(batch)
        goal, worst, both = self.errands(p)
        n = batch.n
        values = np.full((n, 5), NOWHERE)  # per move (N, S, E, W, stay): lower is better
        spare = np.minimum(p.food, p.water)
        for kind, known, nearest, via, via_here, lost, hope in (
                (FOOD, p.known_f, p.dist_f, p.via_f_field, p.via_f, p.lost_f, p.hope_f),
                (WATER, p.known_w, p.dist_w, p.via_w_field, p.via_w, p.lost_w, p.hope_w)):
            going = (goal == kind) & known
            if hope is not None:  # across unseen ground
                hoping = np.flatnonzero(going & lost)
                values[hoping] = self._values(hope, p.here[hoping])
                going &= ~lost
            # the source from which the other resource is near, when there is enough to get there
            by_way = going & (spare - via_here >= 2) & (via[p.here] < FAR)
            roundabout = np.flatnonzero(by_way)
            values[roundabout] = self._values(via, p.here[roundabout])
            direct = np.flatnonzero(going & ~by_way)
            values[direct] = self._values(nearest, p.here[direct])
            if kind == FOOD and direct.size > 1:
                self._share_forests(p, direct, values)
        searching = np.flatnonzero(((goal == FOOD) & ~p.known_f) | ((goal == WATER) & ~p.known_w))
        if searching.size:
            values[searching] = self._values(self.search_field(p, searching), p.here[searching])
            lost = searching[values[searching, 4] >= NOWHERE]  # nothing unseen left: any scrub
            lost_food = lost[goal[lost] == FOOD]
            values[lost_food] = self._values(p.dist_f, p.here[lost_food])

        idle = goal == AgentBook.NONE
        if self.explore:
            sated = np.flatnonzero(idle & (both >= self.explore_margin))
            if sated.size:
                step, going = self._explore_steps(batch, p, sated)
                chosen = np.full((sated.size, 5), 2.0)
                chosen[:, 4] = 1.0
                chosen[np.arange(sated.size), step] = 0.0
                values[sated[going]] = chosen[going]
                idle[sated[going]] = False
        # Nothing to do: wait by the water nearest to forests (drinking trains Fishing) when there
        # is enough to get there; else by the nearest water; else where it stands.
        at_home = idle & (spare - p.via_w >= self.margin) & (p.via_w_field[p.here] < FAR)
        home = np.flatnonzero(at_home)
        values[home] = self._values(p.via_w_field, p.here[home])
        to_water = np.flatnonzero(idle & ~at_home & p.known_w)
        values[to_water] = self._values(p.dist_w, p.here[to_water])

        # Stepping on a forest eats it, and a forest grows back only after about 40 ticks: a fed
        # agent keeps off forests unless going to eat (a tie-breaker: less than a step's worth).
        r = batch.radius
        forest = batch.material[:, r + STEPS[:, 0], r + STEPS[:, 1]] == Material.FOREST
        fed = (goal != FOOD) & (2 * p.food > self.book.cap[p.ids, 0])
        values[:, :4] += np.where(forest & fed[:, None], 0.6, 0.0)
        moves = self._downhill(values, p.allowed)
        fleeing = np.flatnonzero(p.in_zone | (self.flee_attackers & self._hit_by_visible(batch)))
        if fleeing.size and p.threat_row.size:
            cheb = chebyshev(p.row[fleeing, None], p.col[fleeing, None], p.threat_row, p.threat_col)
            nearest = np.argmin(cheb, axis=1)
            moves[fleeing] = self.flee(batch, fleeing, p.threat_row[nearest], p.threat_col[nearest],
                                       p.allowed[fleeing], self._flight_values(p, fleeing, goal))
        if self.trace is not None:
            self.trace.append({"ids": p.ids, "row": p.row, "col": p.col, "food": p.food, "water": p.water,
                               "goal": goal, "worst": worst, "d_food": p.d_food, "d_water": p.d_water,
                               "via_f": p.via_f, "via_w": p.via_w, "moves": moves, "in_zone": p.in_zone})
        return moves

    def errands(self, p: Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Update and return each agent's committed errand (NONE, FOOD, WATER), with the best and
        the worse plan's worst moment."""
        slack_f, slack_w = p.food - p.d_food, p.water - p.d_water
        food_first = np.minimum(slack_f, p.water - p.via_f)
        water_first = np.minimum(slack_w, p.food - p.via_w)
        pick_food = (food_first > water_first) | ((food_first == water_first) & (slack_f <= slack_w))
        # When both plans run something out, the one that costs less health (a tick at zero food
        # or water costs 1).
        cost_f = np.maximum(-slack_f, 0) + np.maximum(p.via_f - p.water, 0)
        cost_w = np.maximum(-slack_w, 0) + np.maximum(p.via_w - p.food, 0)
        pick_food = np.where((cost_f > 0) & (cost_w > 0), cost_f <= cost_w, pick_food)
        # One resource unknown: search for it first, unless the known one is short (a search may
        # take long; better to set out with the other one full).
        pick_food = np.where(p.known_f & ~p.known_w, slack_f < self.margin, pick_food)
        pick_food = np.where(p.known_w & ~p.known_f, slack_w >= self.margin, pick_food)
        worst, both = np.maximum(food_first, water_first), np.minimum(food_first, water_first)

        goal = self.book.goal[p.ids]
        goal[(goal == FOOD) & p.on_forest] = AgentBook.NONE
        goal[(goal == WATER) & p.at_water] = AgentBook.NONE
        # a search that found what it looked for: decide afresh which leg comes first
        searched = self.book.searching[p.ids]
        goal[searched & (((goal == FOOD) & p.known_f) | ((goal == WATER) & p.known_w))] = AgentBook.NONE
        start = (goal == AgentBook.NONE) & (worst < self.margin) & ~(p.on_forest & p.at_water)
        # a plan whose first leg is where the agent stands goes on to its second leg
        first = np.where(pick_food, np.where(p.on_forest, WATER, FOOD), np.where(p.at_water, FOOD, WATER))
        goal[start] = first[start]
        # a search gives way to a known source of what is about to run out first
        goal[(goal == FOOD) & ~p.known_f & p.known_w & (slack_w < 1) & (p.water < p.food)] = WATER
        goal[(goal == WATER) & ~p.known_w & p.known_f & (slack_f < 1) & (p.food < p.water)] = FOOD
        # top up on the way: a drink or a meal a step or two off the path, when the other leg of
        # the errand would leave little of it
        # (and that gains more than the detour costs)
        cap = self.book.cap[p.ids]
        # (and that gains more than the detour costs, and that the errand can afford)
        goal[(goal == FOOD) & (p.d_water <= self.top_up) & (p.water - p.via_f < self.explore_margin)
             & (p.water + 2 * p.d_water + 2 <= cap[:, 1]) & (slack_f - 2 * p.d_water >= self.margin)
             & ~p.on_forest] = WATER
        goal[(goal == WATER) & (p.d_food <= self.top_up) & (p.food - p.via_w < self.explore_margin)
             & (p.food + 2 * p.d_food + 2 <= cap[:, 0]) & (slack_w - 2 * p.d_food >= self.margin)
             & ~p.at_water] = FOOD
        self.book.goal[p.ids] = goal
        self.book.searching[p.ids] = ((goal == FOOD) & ~p.known_f) | ((goal == WATER) & ~p.known_w)
        return goal, worst, both

    # ---------------------------------------------------------------- moves
    def _share_forests(self, p: Plan, agents: np.ndarray, values: np.ndarray) -> None:
        """Two hungry agents heading for the same forest: the nearer keeps it, the other heads for
        the nearest forest nobody nearer is heading for (one round; a forest feeds one agent)."""
        here, dist = p.here[agents], p.dist_f
        target = here.copy()
        for _ in range(int(dist[here].max(initial=0))):  # walk each path down to its forest
            nb = target[:, None] + self.offsets
            below = dist[nb] == (dist[target] - 1)[:, None]
            step = below.any(axis=1)
            if not step.any():
                break
            target = np.where(step, nb[np.arange(target.size), np.argmax(below, axis=1)], target)
        order = np.lexsort((dist[here], target))  # by target, nearest first
        first = np.ones(agents.size, dtype=bool)
        first[1:] = target[order][1:] != target[order][:-1]
        losers = order[~first]
        if losers.size == 0:
            return
        claimed = np.zeros(dist.size, dtype=bool)
        claimed[target[order[first]]] = True
        free = p.f_src[~claimed[p.f_src]]
        field = distance_field(p.open, free, np.zeros(free.size, dtype=np.int64), self.size, here[losers],
                               self.plan_limit)
        found = losers[field[here[losers]] < FAR]
        values[agents[found]] = self._values(field, here[found])

    def _flight_values(self, p: Plan, agents: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Errand values for agents fleeing a hostile: the plans close the ground around it, so
        these come from food and water fields that leave it open (a chased agent runs past a
        forest rather than starve; it never stops to fight)."""
        open_ = p.open | p.zone
        open_[~self.memory.walkable()] = False
        here = p.here[agents]
        thirsty = (goal[agents] == WATER) | ((goal[agents] == AgentBook.NONE) & (p.water < p.food)[agents])
        values = np.empty((agents.size, 5))
        for mask, src in ((~thirsty, p.f_src), (thirsty, p.w_src)):
            if mask.any():
                field = distance_field(open_, src, np.zeros(src.size, dtype=np.int64), self.size, here[mask],
                                       self.plan_limit)
                values[mask] = self._values(field, here[mask])
        return values

    def _values(self, field: np.ndarray, here: np.ndarray) -> np.ndarray:
        """(k, 5) field values after each move (N, S, E, W, stay)."""
        return field[np.concatenate([here[:, None] + self.offsets, here[:, None]], axis=1)].astype(np.float64)

    def _downhill(self, values: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """Per agent, the allowed move with the lowest value when it is lower than staying (ties at
        random); when the way down is blocked, a sidestep to an equal value half the time (to get
        round whoever blocks), else stay."""
        n = values.shape[0]
        stay = values[:, 4:5]
        jitter = self.rng.random((n, 4)) * 0.5
        options = np.where(allowed[:, :4], values[:, :4] + jitter, np.inf)
        best = np.argmin(options, axis=1)
        down = options[np.arange(n), best] < stay[:, 0]
        blocked = ~down & (values[:, :4] < stay).any(axis=1)
        level = np.where(allowed[:, :4] & (values[:, :4] == stay) & (stay < NOWHERE), jitter, np.inf)
        side = np.argmin(level, axis=1)
        sidestep = blocked & np.isfinite(level[np.arange(n), side]) & (self.rng.random(n) < 0.5)
        return np.where(down, best, np.where(sidestep, side, Direction.STAY))

    def flee(self, batch: Batch, agents: np.ndarray, threat_row: np.ndarray, threat_col: np.ndarray,
             allowed: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        """Per agent, the allowed move that ends farthest (Chebyshev) from its threat at (row, col),
        up to `hostile_berth` + 1; among those, the one best for its errand (`values`), then the
        one farthest in L1."""
        me = batch.me[agents].astype(np.int64)
        dr = np.abs(me[:, EntityAttr.ROW, None] + DELTAS[:, 0] - threat_row[:, None])
        dc = np.abs(me[:, EntityAttr.COL, None] + DELTAS[:, 1] - threat_col[:, None])
        away = np.minimum(np.maximum(dr, dc), self.hostile_berth + 1)
        errand = np.zeros(dr.shape) if values is None else np.minimum(values, NOWHERE) / NOWHERE
        gap = 4.0 * away - errand + 0.1 * (dr + dc) + self.rng.random(dr.shape) * 0.05
        return np.argmax(np.where(allowed, gap, -np.inf), axis=1)

    @staticmethod
    def _hit_by_visible(batch: Batch) -> np.ndarray:
        ent = batch.entity
        attacker_id = batch.me[:, EntityAttr.ATTACKER_ID]
        return (attacker_id != 0) & (ent[:, 1:, EntityAttr.ID] == attacker_id[:, None]).any(axis=1)

    def _explore_steps(self, batch: Batch, p: Plan, agents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First steps toward the visible tile farthest (L1) from each agent's spawn among those
        from which both plans (food then water, water then food) still leave `margin`; and whether
        there is such a tile farther from the spawn than where the agent stands."""
        r, size = batch.radius, self.size
        rows = batch.rows[agents].astype(np.int64)
        cols = batch.cols[agents].astype(np.int64)
        tile = rows * size + cols
        material = batch.material[agents]
        free = WALKABLE[material] & (material != Material.FOREST) & ~batch.occupied[agents] & ~p.zone[tile]
        free[:, r, r] = True
        dist = walk_distances(free, 2 * r).astype(np.int64)
        reach = dist >= 0

        # Distances from a tile: the field's where its search got there, else no more than
        # walking back here and on from here.
        def at(field: np.ndarray, from_here: np.ndarray) -> np.ndarray:
            return np.minimum(field[tile], dist + from_here[agents, None, None])

        food, water = p.food[agents, None, None] - dist, p.water[agents, None, None] - dist
        food_first = np.minimum(food - at(p.dist_f, p.d_food), water - at(p.via_f_field, p.via_f))
        water_first = np.minimum(water - at(p.dist_w, p.d_water), food - at(p.via_w_field, p.via_w))
        safe = np.minimum(food_first, water_first) >= self.margin
        spawn = self.book.spawn[p.ids[agents]]
        far = np.abs(rows - spawn[:, 0, None, None]) + np.abs(cols - spawn[:, 1, None, None])
        ok = reach & safe & self.band[tile] & (dist > 0)
        n = agents.size
        score = np.where(ok, far + self.rng.random(far.shape) * 0.5, -np.inf).reshape(n, -1)
        best = np.argmax(score, axis=1)
        going = far.reshape(n, -1)[np.arange(n), best] > far[:, r, r]
        going &= ok.reshape(n, -1)[np.arange(n), best]
        return step_towards(np.where(reach, dist, -1), best, going), going


class ForageNoExplore(Forage):
    """Forage without exploration trips: a sated agent waits by the water."""

    explore = False
