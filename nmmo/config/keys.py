"""The config keys: a base `Config`, the game-system mixins and the size presets: declarations,
every key with its type, default, bounds and docstring (the data of `nmmo.config`, whose docstring
says how configs are composed; `nmmo.config.checks` ties keys together, `nmmo.config.files` loads
them)."""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from nmmo.config.checks import ConfigError, check_combinations

# Lower/upper bounds per key, checked by `Config.set`. Keys not listed only get a type check. Upper
# bounds keep every value inside what the state tables' integer types can hold.
_BOUNDS: dict[str, tuple[float | None, float | None]] = {}


def _bounds(**limits: tuple[float | None, float | None]) -> None:
    _BOUNDS.update(limits)


class Config:
    """Capacities and world settings shared by every game; no game system is on."""

    # --- map ---
    MAP_CENTER: int = 128
    """Side of the playable square, in tiles."""
    MAP_BORDER: int = 16
    """Width of the lava border around the playable square (at least the vision radius)."""
    MAP_N: int = 256
    """Training map pool size: training maps use seeds 0 .. MAP_N - 1."""
    MAP_N_EVAL: int = 64
    """Held-out evaluation map pool size."""
    MAP_EVAL_SEED_OFFSET: int = 1_000_000
    """Evaluation maps use seeds MAP_EVAL_SEED_OFFSET .. + MAP_N_EVAL - 1 (disjoint from training)."""
    MAP_NOISE_OCTAVES_MAX: int = 8
    """Noise octaves are MAP_CENTER // 8, capped at this."""
    MAP_NOISE_FREQ_MAX: float = 1 / 8
    """Highest noise frequency (cycles per tile)."""
    MAP_NOISE_FREQ_MIN: float = 1 / 64
    """Lowest noise frequency on the largest maps (smaller maps stop at 2 / MAP_CENTER)."""
    MAP_NOISE_SPREAD: float = 0.265
    """Standard deviation of the height in [0, 1], whose shape is nmmo 2.1.1's (0.265: its own spread)."""
    MAP_WATER_THRESHOLD: float = 0.30
    """Blended noise at or below this is water."""
    MAP_GRASS_THRESHOLD: float = 0.70
    """... at or below this is grass."""
    MAP_FOREST_THRESHOLD: float = 0.85
    """... at or below this is forest; above it is stone."""
    PATH_MAPS: str = ""
    """Map cache directory; empty means $NMMO_CACHE_DIR/maps, else $XDG_CACHE_HOME/nmmo/maps (~/.cache)."""

    # --- episode and players ---
    HORIZON: int = 1024
    """Ticks per episode; agents alive then are truncated."""
    PLAYER_N: int = 256
    """Population cap (and the initial population spawned by reset)."""
    PLAYER_RESPAWN: bool = True
    """Continuous spawning: dead agents are replaced by new ids. False: nobody respawns."""
    PLAYER_SPAWN_ATTEMPTS: int = 2
    """Respawns per tick at most."""
    PLAYER_SPAWN_SPACING: int = 1
    """Least Chebyshev distance between the initial spawns of different teams; validate() rejects a
    PLAYER_N the edge ring cannot hold that far apart (5, beyond mage reach, holds 100 on 128 tiles)."""
    PLAYER_VISION_RADIUS: int = 7
    """Observation radius R: agents see a (2R+1)^2 window."""
    PLAYER_N_OBS: int = 100
    """Entity rows per observation (row 0 is the observer)."""
    PLAYER_TEAM_SIZE: int = 1
    """Players per team; teams are contiguous blocks of agent slots."""
    PLAYER_TEAM_SPIRIT: float = 0.0
    """Team-spirit reward blend alpha: alpha * team mean + (1 - alpha) * own reward."""
    IMMORTAL: bool = False
    """No deaths (for benchmarks): health never drops below 1."""
    REWARD_ACHIEVEMENT: bool = False
    """Add achievement points / 15 to the env's reward on the tick they are earned (each tier once
    per agent; `nmmo.core.metrics.ACHIEVEMENT_TIERS`), beside -1 at death."""

    # --- tasks (`nmmo.tasks`; `nmmo.Env(config, tasks=...)` sets TASKS too) ---
    TASKS: str = ""
    """Task set of the agents' objectives: a shipped set's name (foraging, exploration, combat,
    npc_hunting, team, train, heldout_v1; the directed benchmark's directed and heldout) or a .toml /
    .json path; empty: no tasks."""
    TASK_ASSIGN: str = "agent"
    """Who draws a task at reset: each "agent" (slot), or each "team" (its members share it)."""
    TASK_REWARD: float = 1.0
    """Weight of the task reward in the env's reward."""
    TASK_SURVIVAL_REWARD: float = 0.0
    """Weight of the survival reward (-1 at death, or your reward_fn's, plus achievement points) when
    tasks are on; 0: the reward is the task reward alone, as in nmmo 2.x."""
    TASK_CURRICULUM: str = ""
    """How tasks are drawn at reset: "" by the specs' weights, "edge" favouring the tasks the agents
    complete about half the time (`nmmo.tasks.sampling.EdgeSampler`, fed by each env's own ended lives)."""
    TASK_EMBEDDING: int = 2
    """Version of the task embedding the observation's Task field holds (`nmmo.tasks.embedding`): 2
    (730 floats, every argument, decodable) or 1 (276 floats, what baseline:tasks was trained on)."""

    # --- minigames (`nmmo.games`; the canonical configs of the same names set GAME) ---
    GAME: str = ""
    """The minigame played: race_to_centre, king_of_the_hill, team_battle, protect_the_king or
    sandwich (its rules, team task set and win condition); empty: the open world."""
    GAME_ADAPTIVE: bool = False
    """A curriculum: the game's difficulty adapts between the episodes of one env to the wins so far
    (king of the hill: the hold duration, `nmmo.games.centre.HOLD_SCHEDULE`); False (tournaments,
    evaluation): every episode is played at the fixed difficulty."""
    GAME_MIX: str = ""
    """Vector envs: a comma-separated list of minigames, env k of a `VectorEnv` playing the k-th (in
    turn) on its canonical config (a generalist's training; they share one observation layout);
    empty: every env plays this config. GAME must be the first of the list."""
    GAME_HOLD: int = 30
    """King of the hill: ticks a team holds the centre to win, when GAME_ADAPTIVE is off."""
    GAME_FOG_ONSET: int = 32
    """Sandwich: the tick the fog starts closing in from the map's edge."""
    GAME_FOG_FINAL: int = 6
    """Sandwich: the Chebyshev radius around the centre the fog leaves free at last."""
    GAME_FOG_DAMAGE: int = 5
    """Sandwich: health a player in the fog loses each tick."""

    # --- NPC capacities (settable only with the NPC system on) ---
    NPC_N: int = 128
    """NPC population cap."""
    NPC_LEVEL_MAX: int = 30
    """Level of the strongest NPCs (at the map centre)."""
    NPC_LEVEL_SPREAD: int = 5
    """NPC skill levels are drawn uniformly within +-spread of the level base."""

    _bounds(
        MAP_CENTER=(4, 4096),
        MAP_BORDER=(1, 1024),
        MAP_N=(1, 2**31),
        MAP_N_EVAL=(1, 2**31),
        MAP_EVAL_SEED_OFFSET=(0, 2**40),
        MAP_NOISE_OCTAVES_MAX=(1, 16),
        MAP_NOISE_FREQ_MAX=(1e-4, 0.5),
        MAP_NOISE_FREQ_MIN=(1e-4, 0.5),
        MAP_NOISE_SPREAD=(0.01, 1.0),
        MAP_WATER_THRESHOLD=(0.0, 1.0),
        MAP_GRASS_THRESHOLD=(0.0, 1.0),
        MAP_FOREST_THRESHOLD=(0.0, 1.0),
        HORIZON=(1, 10**7),
        PLAYER_N=(1, 2**16),
        PLAYER_SPAWN_ATTEMPTS=(0, 2**12),
        PLAYER_SPAWN_SPACING=(1, 2**12),
        PLAYER_VISION_RADIUS=(1, 64),
        PLAYER_N_OBS=(1, 2**14),
        PLAYER_TEAM_SIZE=(1, 2**16),
        PLAYER_TEAM_SPIRIT=(0.0, 1.0),
        TASK_REWARD=(0.0, 1e6),
        TASK_SURVIVAL_REWARD=(0.0, 1e6),
        TASK_EMBEDDING=(1, 2),
        GAME_HOLD=(1, 10**6),
        GAME_FOG_ONSET=(0, 10**7),
        GAME_FOG_FINAL=(0, 4096),
        GAME_FOG_DAMAGE=(0, 10**6),
        NPC_N=(0, 2**20),
        NPC_LEVEL_MAX=(1, 99),
        NPC_LEVEL_SPREAD=(0, 99),
    )

    #: Systems this config enables; each mixin appends its name.
    SYSTEMS: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Each mixin declares only its own name; a composed class enables the union of its bases'.
        super().__init_subclass__(**kwargs)
        cls.SYSTEMS = _collect_systems(cls)

    def __init__(self, **overrides: Any) -> None:
        self.description = (type(self).__doc__ or "").strip().splitlines()[0] if type(self).__doc__ else ""
        self.name = type(self).__name__
        for key, value in overrides.items():
            self.set(key, value)

    # ----------------------------------------------------------------- keys
    @property
    def MAP_SIZE(self) -> int:  # noqa: N802 - config keys are upper case by convention
        """Side of the whole map (playable square plus border on both sides)."""
        return self.MAP_CENTER + 2 * self.MAP_BORDER

    @classmethod
    def _all_keys(cls) -> list[str]:
        seen: dict[str, None] = {}
        for klass in reversed(cls.__mro__):
            for key in vars(klass):
                if key.isupper() and key != "SYSTEMS" and not isinstance(vars(klass)[key], property):
                    seen[key] = None
        return list(seen)

    def keys(self) -> list[str]:
        """The keys this config accepts: base keys plus those of the enabled systems."""
        return [k for k in self._all_keys() if self._system_of(k) in (None, *self.SYSTEMS)]

    @staticmethod
    def _system_of(key: str) -> str | None:
        for system in _SYSTEM_PREFIXES:
            if key.startswith(system.upper() + "_"):
                return system
        return None

    def has(self, system: str) -> bool:
        """True when the named game system ("Resource", "Combat", ...) is on."""
        return system in self.SYSTEMS

    def has_tasks(self) -> bool:
        """True when agents hold tasks: a task set (TASKS) or a minigame (GAME, whose team tasks they are)."""
        return bool(self.TASKS or self.GAME)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for key in self.keys():
            yield key, getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        """All active keys and their values (MAP_SIZE included, derived)."""
        out = {key: getattr(self, key) for key in self.keys()}
        out["MAP_SIZE"] = self.MAP_SIZE
        return out

    # ------------------------------------------------------------------ set
    def set(self, key: str, value: Any) -> Config:
        """Set one key after checking that it exists, has the right type and lies in range.

        Returns the config so calls chain: ``Small().set("PLAYER_N", 8).set("HORIZON", 64)``.
        """
        if not isinstance(key, str):
            raise ConfigError(f"config keys are strings, got {key!r} ({type(key).__name__})")
        if key == "MAP_SIZE":
            raise ConfigError("MAP_SIZE is derived (MAP_CENTER + 2 * MAP_BORDER); set those instead")
        if key not in self.keys():
            raise ConfigError(self._unknown_key_message(key))
        object.__setattr__(self, key, self._checked(key, value))
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        # `config.HORIZN = 8` would otherwise be ignored silently; values are checked by validate()
        if name.isupper() and name not in self._all_keys():
            raise ConfigError(self._unknown_key_message(name))
        object.__setattr__(self, name, value)

    def _checked(self, key: str, value: Any) -> Any:
        """`value` coerced to the key's type, or ConfigError when the type or range is wrong."""
        value = _coerce(key, getattr(type(self), key), value)
        low, high = _BOUNDS.get(key, (None, None))
        if low is not None and value < low or high is not None and value > high:
            raise ConfigError(
                f"{key}={value!r} is out of range: expected "
                f"{'-inf' if low is None else low} <= {key} <= {'inf' if high is None else high}"
            )
        return value

    def _unknown_key_message(self, key: str) -> str:
        system = self._system_of(key)
        mixin = globals().get(system) if system is not None else None  # the system's mixin class, defined below
        if system is not None and (key in self._all_keys() or key in vars(mixin or object)):
            return (
                f"config key {key!r} belongs to the {system} system, which {self.name} does not "
                f"enable; add the nmmo.config.{system} mixin (or list it under `systems` in TOML)"
            )
        close = difflib.get_close_matches(key.upper(), self.keys(), n=4, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        return f"unknown config key {key!r} for {self.name}.{hint}"

    def update(self, values: dict[str, Any]) -> Config:
        """Set several keys; each is checked as by `set`."""
        for key, value in values.items():
            self.set(key, value)
        return self

    # ------------------------------------------------------------- validate
    def validate(self) -> Config:
        """Check every key's type and range (also those assigned as attributes) and the rules that
        tie keys together (`nmmo.config.checks`); raise ConfigError naming the keys involved."""
        for key in self.keys():
            self._checked(key, getattr(self, key))
        check_combinations(self)
        return self

    # ------------------------------------------------------- print and diff
    def diff(self, other: Config) -> dict[str, tuple[Any, Any]]:
        """Keys whose values differ: ``{key: (self's value, other's value)}``; a key that only one
        side has shows ``None`` on the other side."""
        mine, theirs = self.to_dict(), other.to_dict()
        out = {}
        for key in sorted(set(mine) | set(theirs)):
            a, b = mine.get(key), theirs.get(key)
            if a != b:
                out[key] = (a, b)
        return out

    def to_toml(self) -> str:
        """Render as a TOML task file that `load` reads back to an equal config."""
        preset = next((c.__name__ for c in type(self).__mro__ if c in _PRESETS.values()), "Config")
        lines = [f'preset = "{preset}"', f"systems = [{', '.join(repr(s) for s in self.SYSTEMS)}]"]
        lines = [line.replace("'", '"') for line in lines]
        lines.append("")
        lines.append("[keys]")
        for key, value in self:
            lines.append(f"{key} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return f"# {self.name}\n" + self.to_toml()

    def __repr__(self) -> str:
        systems = "+".join(self.SYSTEMS) or "no systems"
        return f"<{self.name} ({systems}) {self.MAP_SIZE}x{self.MAP_SIZE} PLAYER_N={self.PLAYER_N}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.to_dict() == other.to_dict() and (
            self.SYSTEMS == other.SYSTEMS
        )

    __hash__ = None  # type: ignore[assignment]  # mutable


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return str(value)


def _coerce(key: str, default: Any, value: Any) -> Any:
    """Return `value` as the type of the key's default, or raise ConfigError naming the key."""
    if isinstance(value, np.generic):
        value = value.item()
    expected = type(default)
    if expected is bool:
        if isinstance(value, bool):
            return value
    elif expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif expected is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(f"{key} must be a finite number, got {value!r}")
            return float(value)
    elif expected is str:
        if isinstance(value, (str, os.PathLike)):
            return os.fspath(value)
    else:  # pragma: no cover - every key has one of the types above
        return value
    raise ConfigError(
        f"{key} expects {expected.__name__}, got {value!r} ({type(value).__name__})"
    )


# ---------------------------------------------------------------- systems
class Resource:
    """Food, water and health: foraging forests, drinking next to water, starvation, regeneration."""

    SYSTEMS = ("Resource",)
    RESOURCE_FOOD_DECAY: int = 1
    """Food lost per tick."""
    RESOURCE_WATER_DECAY: int = 1
    """Water lost per tick."""
    RESOURCE_STARVE_DAMAGE: int = 1
    """Health lost per tick at zero food."""
    RESOURCE_DEHYDRATE_DAMAGE: int = 1
    """Health lost per tick at zero water."""
    RESOURCE_REGEN_THRESHOLD: float = 0.5
    """Health regenerates while food and water are both above this fraction of capacity."""
    RESOURCE_REGEN_FRACTION: float = 0.1
    """Regeneration per tick as a fraction of the Constitution level (at least RESOURCE_REGEN_MIN)."""
    RESOURCE_REGEN_MIN: int = 1
    """Smallest regeneration step."""
    RESOURCE_FOREST_REGROW_PROB: float = 0.025
    """Chance per tick that a depleted forest (scrub) grows back."""

    _bounds(
        RESOURCE_FOOD_DECAY=(0, 10**4),
        RESOURCE_WATER_DECAY=(0, 10**4),
        RESOURCE_STARVE_DAMAGE=(0, 10**4),
        RESOURCE_DEHYDRATE_DAMAGE=(0, 10**4),
        RESOURCE_REGEN_THRESHOLD=(0.0, 1.0),
        RESOURCE_REGEN_FRACTION=(0.0, 100.0),
        RESOURCE_REGEN_MIN=(0, 10**4),
        RESOURCE_FOREST_REGROW_PROB=(0.0, 1.0),
    )


class Combat:
    """Melee, range and mage attacks: reach, accuracy and damage from levels, armour, freeze."""

    SYSTEMS = ("Combat",)
    COMBAT_MELEE_REACH: int = 1
    """Chebyshev reach of melee attacks."""
    COMBAT_RANGE_REACH: int = 3
    """Chebyshev reach of range attacks."""
    COMBAT_MAGE_REACH: int = 4
    """Chebyshev reach of mage attacks."""
    COMBAT_MELEE_DAMAGE_BASE: int = 7
    """Melee hit damage at level L is floor(BASE + SCALE * L / 99)."""
    COMBAT_MELEE_DAMAGE_SCALE: int = 63
    COMBAT_RANGE_DAMAGE_BASE: int = 3
    COMBAT_RANGE_DAMAGE_SCALE: int = 32
    COMBAT_MAGE_DAMAGE_BASE: int = 1
    COMBAT_MAGE_DAMAGE_SCALE: int = 24
    COMBAT_ACCURACY_DEFENSE_WEIGHT: float = 0.3
    """A hit needs d20 >= DEFENSE_WEIGHT * D + LEVEL_WEIGHT * T - A + OFFSET (or a natural 20)."""
    COMBAT_ACCURACY_LEVEL_WEIGHT: float = 0.7
    COMBAT_ACCURACY_OFFSET: float = 10.0
    COMBAT_ARMOUR_ABSORB_DIVISOR: int = 5
    """A hit deals max(1, damage - floor(armour / DIVISOR))."""
    COMBAT_MISS_DAMAGE: int = 1
    """Damage of a missed attack."""
    COMBAT_FREEZE_TICKS: int = 3
    """A damaging mage attack freezes its target for this many ticks (no freeze-lock)."""
    COMBAT_FRIENDLY_FIRE: bool = True
    """Whether teammates can attack each other."""

    _bounds(
        COMBAT_MELEE_REACH=(1, 16),
        COMBAT_RANGE_REACH=(1, 16),
        COMBAT_MAGE_REACH=(1, 16),
        COMBAT_MELEE_DAMAGE_BASE=(0, 10**5),
        COMBAT_MELEE_DAMAGE_SCALE=(0, 10**5),
        COMBAT_RANGE_DAMAGE_BASE=(0, 10**5),
        COMBAT_RANGE_DAMAGE_SCALE=(0, 10**5),
        COMBAT_MAGE_DAMAGE_BASE=(0, 10**5),
        COMBAT_MAGE_DAMAGE_SCALE=(0, 10**5),
        COMBAT_ARMOUR_ABSORB_DIVISOR=(1, 10**4),
        COMBAT_MISS_DAMAGE=(0, 10**5),
        COMBAT_FREEZE_TICKS=(0, 10**4),
    )


class Progression:
    """Seven skills gaining XP from foraging and fighting; levels set capacities and max health."""

    SYSTEMS = ("Progression",)
    PROGRESSION_LEVEL_MAX: int = 99
    """Highest skill level."""
    PROGRESSION_BASE_LEVEL: int = 1
    """Starting level of Melee, Range, Mage and Defense."""
    PROGRESSION_RESOURCE_BASE_LEVEL: int = 10
    """Starting level of Constitution, Hunting and Fishing."""
    PROGRESSION_HARVEST_XP_SCALE: int = 10
    """A forest harvest or water refill gives SCALE * the skill's level to Hunting / Fishing."""
    PROGRESSION_DEALT_CONSTITUTION_XP: int = 20
    """XP per damage point dealt, to Constitution."""
    PROGRESSION_DEALT_STYLE_XP: int = 40
    """XP per damage point dealt, to the attack style's skill."""
    PROGRESSION_TAKEN_CONSTITUTION_XP: int = 20
    """XP per damage point taken and survived, to Constitution."""
    PROGRESSION_TAKEN_DEFENSE_XP: int = 40
    """XP per damage point taken and survived, to Defense."""

    _bounds(
        PROGRESSION_LEVEL_MAX=(1, 99),
        PROGRESSION_BASE_LEVEL=(1, 99),
        PROGRESSION_RESOURCE_BASE_LEVEL=(1, 99),
        PROGRESSION_HARVEST_XP_SCALE=(0, 10**6),
        PROGRESSION_DEALT_CONSTITUTION_XP=(0, 10**6),
        PROGRESSION_DEALT_STYLE_XP=(0, 10**6),
        PROGRESSION_TAKEN_CONSTITUTION_XP=(0, 10**6),
        PROGRESSION_TAKEN_DEFENSE_XP=(0, 10**6),
    )


class NPC:
    """Non-player characters (passive, neutral, hostile by distance from the centre) and the
    armour they drop. Needs Combat."""

    SYSTEMS = ("NPC",)
    NPC_SPAWN_ATTEMPTS: int = 25
    """NPC spawn attempts per tick while fewer than NPC_N exist."""
    NPC_LEVEL_MIN: int = 1
    """Level of the weakest NPCs (at the playable edge)."""
    NPC_HOSTILE_DANGER: float = 0.8
    """Danger (0 at the edge, ~1 at the centre) from which NPCs are hostile."""
    NPC_NEUTRAL_DANGER: float = 0.5
    """Danger from which NPCs are neutral (passive below)."""
    NPC_VISION_RADIUS: int = 5
    """How far NPCs see targets."""
    NPC_REGEN: int = 1
    """NPC health regained per tick."""
    NPC_ARMOUR_OFFSET: float = -10.0
    """Armour piece level ~ clip(Normal(Defense + OFFSET, STD), 0, Defense)."""
    NPC_ARMOUR_STD: float = 10.0
    NPC_FLEE_TICKS: int = 4
    """Ticks a damaged passive NPC flees from its attacker."""

    _bounds(
        NPC_SPAWN_ATTEMPTS=(0, 10**5),
        NPC_LEVEL_MIN=(1, 99),
        NPC_HOSTILE_DANGER=(0.0, 1.0),
        NPC_NEUTRAL_DANGER=(0.0, 1.0),
        NPC_VISION_RADIUS=(1, 64),
        NPC_REGEN=(0, 10**4),
        NPC_ARMOUR_STD=(0.0, 1000.0),
        NPC_FLEE_TICKS=(0, 10**4),
    )


_SYSTEM_PREFIXES = ("Resource", "Combat", "Progression", "NPC")
_MIXINS = {"Resource": Resource, "Combat": Combat, "Progression": Progression, "NPC": NPC}


def _collect_systems(cls: type) -> tuple[str, ...]:
    found = {name for klass in cls.__mro__ for name in vars(klass).get("SYSTEMS", ())}
    return tuple(s for s in _SYSTEM_PREFIXES if s in found)


# ----------------------------------------------------------------- presets
class Small(Config):
    """64x64 map (32x32 playable), 64 agents, 32 NPCs, 128 ticks: for tests and quick looks."""

    MAP_CENTER = 32
    PLAYER_N = 64
    PLAYER_SPAWN_ATTEMPTS = 1
    NPC_N = 32
    NPC_LEVEL_MAX = 10
    NPC_LEVEL_SPREAD = 1
    HORIZON = 128


class Medium(Config):
    """160x160 map (128x128 playable), 256 agents, 128 NPCs, 1024 ticks: the paper's small maps."""

    MAP_CENTER = 128
    PLAYER_N = 256
    PLAYER_SPAWN_ATTEMPTS = 2
    NPC_N = 128
    NPC_LEVEL_MAX = 30
    NPC_LEVEL_SPREAD = 5
    HORIZON = 1024


class Large(Config):
    """1056x1056 map (1024x1024 playable), 1024 agents, 1024 NPCs, 8192 ticks: the paper's large maps."""

    MAP_CENTER = 1024
    PLAYER_N = 1024
    PLAYER_SPAWN_ATTEMPTS = 16
    NPC_N = 1024
    NPC_LEVEL_MAX = 99
    NPC_LEVEL_SPREAD = 10
    HORIZON = 8192


class Default(Medium, Resource, Combat, Progression, NPC):
    """Medium with all four game systems."""


_PRESETS: dict[str, type[Config]] = {"Config": Config, "Small": Small, "Medium": Medium, "Large": Large}
_NAMED_CLASSES: dict[str, type[Config]] = {**_PRESETS, "Default": Default}
