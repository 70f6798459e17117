"""Heatmap overlays: map-size float arrays painted over the terrain in the viewer.

`env.overlays.register(name, heatmap)` adds one, `update(name, heatmap)` replaces its values at any
tick; each change bumps a version so recorders and viewers send it only when it changed. Built-in
overlays are computed from the state tables when asked for:

- ``visits``: how many agent-ticks were spent on each tile this episode (exploration);
- ``food``: 1 on forests that can be harvested now;
- ``water``: 1 on tiles where an agent can drink;
- ``danger``: the NPC danger of each tile (0 at the playable edge, ~1 at the centre) and, on top,
  the combat level of each live NPC on its tile;
- ``skills``: the mean of the six skill levels of the player on each tile;
- ``tasks done`` (runs with tasks only, `TASK_OVERLAYS`): how many agents' tasks became complete
  while they stood on each tile this episode (where tasks get done: the water a drinking task
  needs, the centre a holding task asks for).

Built-ins are computed from a frame (`nmmo.replays.replay.capture`: the viewer's columns of every entity
slot) and the map, by `builtin_heatmap`: the live env and the viewer server's replays both call
it, so a live run and its replay show the same picture, byte for byte.

`value_heatmap` turns a policy's value estimates at agent positions into a heatmap (the mean
estimate per tile); `ValueMap` accumulates them over an episode into a map of the value function
(the ``value`` overlay of `nmmo run --value-overlay`). Its companion, the critic over the whole map
for one standard agent, is `nmmo.envs.landscape` (the ``value landscape`` overlay).

Every overlay says what it shows on tiles it has no data for (`Overlays.blank`: the built-ins'
`BUILTIN_BLANK`, or the note given to `register`); replays record the notes and the viewer's
legend shows them, so a reader knows that, say, an unvisited tile is not a tile of value 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nmmo.core.enums import EntityAttr, Material
from nmmo.core.layout import ObsBatch
from nmmo.core.rules import danger_map, water_adjacent
from nmmo.core.state import State
from nmmo.replays.replay import capture

BUILTIN = ("visits", "food", "water", "danger", "skills", "tasks done")
#: Built-ins a run (or replay) offers only when it has tasks (they read the frame's task fields).
TASK_OVERLAYS = ("tasks done",)
#: What each built-in overlay shows on tiles it has no data for (the viewer's legend says it).
BUILTIN_BLANK = {
    "visits": "tiles no agent has stood on show 0, the cold end",
    "food": "every tile but a harvestable forest shows 0, the cold end",
    "water": "every tile where no agent can drink shows 0, the cold end",
    "danger": "the border outside the playable square shows 0, the cold end",
    "skills": "tiles without a player show 0, the cold end",
    "tasks done": "counts the agents whose task became complete on the tile; tiles where none did show 0, "
                  "the cold end",
}
#: The ``value`` overlay's unvisited tiles (`ValueMap.heatmap`).
VALUE_BLANK = "tiles no agent has stood on yet show the lowest mean so far, the cold end"
#: A user overlay registered without a note: every tile holds what its author gave it.
USER_BLANK = "every tile shows the value the overlay was given (missing data is not marked)"
#: Frame columns of the six skills the ``skills`` overlay averages.
SKILL_FIELDS = ("melee", "range", "mage", "defense", "hunting", "fishing")


class OverlayError(ValueError):
    """An overlay name or heatmap is invalid; the message says which."""


class ValueMap:
    """Per-tile running mean of value estimates over an episode, painted as a heatmap.

    One tick's estimates cover only the tiles agents stand on; accumulated, they paint the value
    function over all the map the agents have explored. Tiles no agent has stood on yet take the
    lowest mean so far, so they sit at the cold end of the colour map with the least valued tiles
    instead of posing as a value of 0 (which is the top of the range when every estimate is
    negative, as with the default death penalty).
    """

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self.total = np.zeros(self.size * self.size)
        self.count = np.zeros(self.size * self.size, dtype=np.int64)

    def add(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
        """Add one estimate per position (several on one tile are all counted)."""
        flat = np.asarray(rows, dtype=np.int64) * self.size + np.asarray(cols, dtype=np.int64)
        self.total += np.bincount(flat, weights=np.asarray(values, dtype=np.float64), minlength=self.total.size)
        self.count += np.bincount(flat, minlength=self.count.size)

    def add_observed(self, observations: ObsBatch | dict[int, dict], values: dict[int, float]) -> None:
        """Add each agent's estimate on the tile it stands on, read from its observation (its own
        Entity row), for the agents both in `values` (a policy's `last_values`) and in what it saw
        (an array batch or per-agent dicts)."""
        if isinstance(observations, ObsBatch):
            known = np.fromiter((int(a) in values for a in observations.ids.tolist()), bool, observations.n)
            me = observations["entity"][known, 0]
            estimates = np.array([values[a] for a in observations.ids[known].tolist()])
        else:
            agents = [a for a in values if a in observations]
            if not agents:
                return
            me = np.stack([observations[a]["Entity"][0] for a in agents])
            estimates = np.array([values[a] for a in agents])
        if len(me):
            self.add(me[:, EntityAttr.ROW], me[:, EntityAttr.COL], estimates)

    def heatmap(self, fill: float | None = None) -> np.ndarray:
        """The mean estimate per visited tile; unvisited tiles hold `fill`, by default the lowest
        mean (0 before any estimate)."""
        seen = self.count > 0
        mean = np.divide(self.total, self.count, out=np.zeros_like(self.total), where=seen)
        if fill is not None:
            mean[~seen] = fill
        elif seen.any():
            mean[~seen] = mean[seen].min()
        return mean.reshape(self.size, self.size).astype(np.float32)


def value_heatmap(size: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Mean of `values` per tile over the given positions (0 where no position falls)."""
    tiles = ValueMap(size)
    tiles.add(rows, cols, values)
    return tiles.heatmap(fill=0.0)


def blank_note(name: str, recorded: object = None) -> str:
    """What overlay `name` of a replay shows on tiles without data: the note recorded with it
    (`recorded`, the header's ``overlay_blank``: untrusted, so only a string is taken, and at most
    300 characters of it), else the built-in's, else one read from the name (replays recorded
    before notes were)."""
    note = recorded.get(name) if isinstance(recorded, dict) else None
    if isinstance(note, str) and note:
        return note[:300]
    if name in BUILTIN_BLANK:
        return BUILTIN_BLANK[name]
    return VALUE_BLANK if name == "value" or name.startswith("value: ") else USER_BLANK


def builtin_names(tasks: bool) -> tuple[str, ...]:
    """The built-in overlays a run offers: all of them with tasks, else those that need none."""
    return BUILTIN if tasks else tuple(name for name in BUILTIN if name not in TASK_OVERLAYS)


def add_completions(counts: np.ndarray, frame: dict[str, np.ndarray], previous: dict[str, np.ndarray] | None) -> None:
    """Count, on its tile, every agent whose task is done in `frame` and was not in `previous` (the
    frame before; None: none), so an agent counts once per completion, where it stood then (also on
    the tick it died)."""
    done = (frame["task"] >= 0) & (frame["task_done"] > 0)
    if previous is not None:
        done &= ~((previous["id"] == frame["id"]) & (previous["task_done"] > 0))
    if done.any():
        size = counts.shape[0]
        np.add.at(counts.ravel(), frame["row"][done].astype(np.int64) * size + frame["col"][done], 1.0)


def add_visits(counts: np.ndarray, frame: dict[str, np.ndarray]) -> None:
    """Count one visit on the tile of every live player of `frame` (one entity per tile)."""
    players = frame["alive"].astype(bool) & (frame["kind"] == 0)
    size = counts.shape[0]
    counts.ravel()[frame["row"][players].astype(np.int64) * size + frame["col"][players]] += 1.0


def builtin_heatmap(name: str, frame: dict[str, np.ndarray], material: np.ndarray, border: int, center: int,
                    visits: np.ndarray | None = None, completions: np.ndarray | None = None) -> np.ndarray:
    """A built-in overlay (S x S float32) of one tick: `frame` holds its entities, `material` its
    map, `visits` the visit counts so far (``visits`` overlay), `completions` the task completions so
    far (``tasks done``, `add_completions`), `border` and `center` the map's geometry (``danger``)."""
    size = material.shape[0]
    if name in ("visits", "tasks done"):
        counts = visits if name == "visits" else completions
        return np.zeros((size, size), dtype=np.float32) if counts is None else counts.astype(np.float32)
    if name == "food":
        return (material == Material.FOREST).astype(np.float32)
    if name == "water":
        return water_adjacent(material).astype(np.float32)
    alive = frame["alive"].astype(bool)
    if name == "danger":
        out = danger_map(border, center, size)
        npcs = alive & (frame["kind"] > 0)
        out[frame["row"][npcs], frame["col"][npcs]] += frame["level"][npcs]
        return out
    if name == "skills":
        players = alive & (frame["kind"] == 0)
        levels = np.stack([frame[field][players] for field in SKILL_FIELDS], axis=1).astype(np.float64)
        return value_heatmap(size, frame["row"][players], frame["col"][players], levels.mean(axis=1))
    raise OverlayError(f"no built-in overlay named {name!r}; built-ins are {', '.join(BUILTIN)}")


class Overlays:
    """The overlays of one env; built-ins read the env's state when asked."""

    def __init__(self, state_fn: Callable[[], State | None], border: int, center: int) -> None:
        self._state_fn = state_fn
        self._border, self._center = border, center
        self._user: dict[str, np.ndarray] = {}
        self._versions: dict[str, int] = {}
        self._blank: dict[str, str] = {}
        self._visit_counts: np.ndarray | None = None
        self._completions: np.ndarray | None = None  # task completions per tile (with tasks on)
        self._last_tasks: dict[str, np.ndarray] | None = None  # the previous tick's task fields

    # ----------------------------------------------------------------- user
    def register(self, name: str, heatmap: np.ndarray, blank: str | None = None) -> None:
        """Add an overlay (an S x S float array, S the map size). `blank` says what its tiles
        without data show (recorded in replays; the viewer's legend shows it)."""
        if not isinstance(name, str) or not name:
            raise OverlayError(f"overlay names are non-empty strings, got {name!r}")
        if name in self._user or name in BUILTIN:  # "tasks done" too, with tasks off: replays may have it
            raise OverlayError(f"overlay {name!r} already exists; use update() to change it")
        self._user[name] = self._checked(name, heatmap)
        self._versions[name] = 1
        self._blank[name] = blank if blank is not None else USER_BLANK

    def update(self, name: str, heatmap: np.ndarray) -> None:
        """Replace the values of a registered overlay."""
        if name not in self._user:
            raise OverlayError(f"no overlay named {name!r}; register() it first (have: {sorted(self._user)})")
        self._user[name] = self._checked(name, heatmap)
        self._versions[name] += 1

    def _checked(self, name: str, heatmap: np.ndarray) -> np.ndarray:
        array = np.asarray(heatmap, dtype=np.float32)
        state = self._state_fn()
        if state is None:
            raise OverlayError("reset() the env before registering overlays (the map size is not known yet)")
        size = state.tiles.size
        if array.shape != (size, size):
            raise OverlayError(f"overlay {name!r} must be a {size}x{size} array (the map size), got {array.shape}")
        if not np.isfinite(array).all():
            raise OverlayError(f"overlay {name!r} has NaN or infinite values")
        return array.copy()

    # --------------------------------------------------------------- access
    def names(self) -> list[str]:
        """Built-in overlays first (``tasks done`` only with tasks on), then user overlays in
        registration order."""
        return [*builtin_names(self._completions is not None), *self._user]

    def user_names(self) -> list[str]:
        return list(self._user)

    def blank(self, name: str) -> str:
        """What the overlay `name` shows on tiles without data."""
        if name in BUILTIN_BLANK:
            return BUILTIN_BLANK[name]
        if name not in self._blank:
            raise OverlayError(f"no overlay named {name!r}; have {self.names()}")
        return self._blank[name]

    def version(self, name: str) -> int:
        """Changes with every update of a user overlay (built-ins: -1, they change every tick)."""
        return self._versions.get(name, -1)

    def get(self, name: str) -> np.ndarray:
        """The S x S float32 heatmap of an overlay."""
        if name in self._user:
            return self._user[name]
        state = self._state_fn()
        if state is None:
            raise OverlayError("reset() the env first")
        if name not in self.names():
            raise OverlayError(f"no overlay named {name!r}; have {self.names()}")
        return builtin_heatmap(name, capture(state), state.tiles.material, self._border, self._center,
                               self._visit_counts, self._completions)

    # ------------------------------------------------------------- built-ins
    def track(self, state: State, tasks: dict[str, np.ndarray] | None = None) -> None:
        """Called by the env after reset and every tick: counts this tick's visits (one bincount)
        and, with tasks on (`tasks`: the frame's task fields, `nmmo.Env.task_columns`), its task
        completions."""
        size = state.tiles.size
        if self._visit_counts is None or self._visit_counts.shape[0] != size:
            self._visit_counts = np.zeros((size, size), dtype=np.float32)
        ent = state.entities
        add_visits(self._visit_counts, {"alive": ent.alive, "kind": ent.npc_type, "row": ent.row, "col": ent.col})
        if tasks is None:
            self._completions = self._last_tasks = None
            return
        if self._completions is None or self._completions.shape[0] != size:
            self._completions, self._last_tasks = np.zeros((size, size), dtype=np.float32), None
        now = {"id": ent.id.copy(), "row": ent.row, "col": ent.col, "task": tasks["task"],
               "task_done": tasks["task_done"]}
        add_completions(self._completions, now, self._last_tasks)
        self._last_tasks = {"id": now["id"], "task_done": np.array(tasks["task_done"])}

    def reset(self) -> None:
        """Forget the user overlays' values and the visit counts (a new episode)."""
        self._visit_counts = self._completions = self._last_tasks = None
        self._user.clear()
        self._versions.clear()
        self._blank.clear()
