"""The rules that tie config keys together (each key's own type and range: `Config.set`), and the
error every config problem raises."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nmmo.config.spawning import min_spawn_distance

if TYPE_CHECKING:
    from nmmo.config.keys import Config


class ConfigError(ValueError):
    """A config key, value or combination is invalid; the message says which and why."""


#: Most agent ids an episode may issue (`possible_agents` lists them all).
MAX_AGENT_IDS = 2**22
#: The minigames' names: their one list, kept here, below the games, so that the config checks GAME
#: without importing them (`nmmo.games.GAMES` is built from it and refuses a name without a class).
GAME_NAMES = ("race_to_centre", "king_of_the_hill", "team_battle", "protect_the_king", "sandwich")


def check_combinations(config: Config) -> None:
    """Raise ConfigError, naming the keys involved, when keys that each passed their own checks do
    not fit together (the map, the vision window, spawns, ids, thresholds, the systems' ranges)."""
    if config.TASK_ASSIGN not in ("agent", "team"):
        raise ConfigError(f"TASK_ASSIGN must be 'agent' or 'team', got {config.TASK_ASSIGN!r}")
    if config.GAME and config.GAME not in GAME_NAMES:
        raise ConfigError(f"GAME={config.GAME!r} is not a minigame; choose one of {', '.join(GAME_NAMES)}")
    if config.GAME == "protect_the_king" and config.PLAYER_RESPAWN:
        raise ConfigError("GAME='protect_the_king' needs PLAYER_RESPAWN = false: a king is a team's first agent, "
                          "and a fallen team must stay out")
    mix = [name.strip() for name in config.GAME_MIX.split(",")] if config.GAME_MIX else []
    if mix and (any(name not in GAME_NAMES for name in mix) or config.GAME != mix[0]):
        raise ConfigError(f"GAME_MIX={config.GAME_MIX!r} must list minigames ({', '.join(GAME_NAMES)}) and start "
                          f"with GAME={config.GAME!r}")
    if config.GAME and config.TASKS and config.TASKS != f"<{config.GAME}>":  # the marker an env with the game sets
        raise ConfigError(f"GAME={config.GAME!r} brings its own team tasks; TASKS={config.TASKS!r} cannot be set too")
    window = 2 * config.PLAYER_VISION_RADIUS + 1
    if config.MAP_CENTER < window:
        raise ConfigError(
            f"MAP_CENTER={config.MAP_CENTER} is smaller than the vision window "
            f"2 * PLAYER_VISION_RADIUS + 1 = {window}"
        )
    if config.MAP_BORDER <= config.PLAYER_VISION_RADIUS:
        raise ConfigError(
            f"MAP_BORDER={config.MAP_BORDER} must exceed PLAYER_VISION_RADIUS={config.PLAYER_VISION_RADIUS}: an "
            "agent that dies in the lava beside the playable square still sees its whole window"
        )
    if config.has("NPC") and config.MAP_BORDER < config.NPC_VISION_RADIUS:
        raise ConfigError(
            f"MAP_BORDER={config.MAP_BORDER} must be at least NPC_VISION_RADIUS={config.NPC_VISION_RADIUS} so "
            "NPC vision windows stay inside the map"
        )
    if config.PLAYER_N_OBS > window * window:
        raise ConfigError(
            f"PLAYER_N_OBS={config.PLAYER_N_OBS} exceeds the {window * window} tiles an agent sees "
            f"(PLAYER_VISION_RADIUS={config.PLAYER_VISION_RADIUS}): rows it could never fill"
        )
    if config.PLAYER_TEAM_SIZE > config.PLAYER_N:
        raise ConfigError(f"PLAYER_TEAM_SIZE={config.PLAYER_TEAM_SIZE} exceeds PLAYER_N={config.PLAYER_N}")
    ids = config.PLAYER_N + (config.PLAYER_SPAWN_ATTEMPTS * config.HORIZON if config.PLAYER_RESPAWN else 0)
    if ids > MAX_AGENT_IDS:
        raise ConfigError(
            f"PLAYER_N + PLAYER_SPAWN_ATTEMPTS x HORIZON = {ids} agent ids (possible_agents) exceeds "
            f"{MAX_AGENT_IDS}: lower PLAYER_SPAWN_ATTEMPTS or HORIZON, or turn PLAYER_RESPAWN off"
        )
    if config.has("NPC") and config.NPC_N > config.MAP_CENTER**2:
        raise ConfigError(f"NPC_N={config.NPC_N} exceeds the {config.MAP_CENTER ** 2} tiles of the playable square")
    ring = 4 * (config.MAP_CENTER - 1)
    if config.PLAYER_N > ring:
        raise ConfigError(
            f"PLAYER_N={config.PLAYER_N} exceeds the {ring} spawn tiles on the edge ring of a "
            f"MAP_CENTER={config.MAP_CENTER} map"
        )
    apart = min_spawn_distance(config.PLAYER_N, config.PLAYER_TEAM_SIZE, config.MAP_CENTER)
    if apart < config.PLAYER_SPAWN_SPACING:
        raise ConfigError(
            f"PLAYER_SPAWN_SPACING={config.PLAYER_SPAWN_SPACING}: the edge ring of a MAP_CENTER={config.MAP_CENTER} "
            f"map holds PLAYER_N={config.PLAYER_N} (teams of {config.PLAYER_TEAM_SIZE}) only {apart} tile(s) apart; "
            "lower PLAYER_N or the spacing"
        )
    if not 0 < config.MAP_WATER_THRESHOLD < config.MAP_GRASS_THRESHOLD < config.MAP_FOREST_THRESHOLD < 1:
        raise ConfigError(
            "map thresholds must satisfy 0 < MAP_WATER_THRESHOLD < MAP_GRASS_THRESHOLD < "
            f"MAP_FOREST_THRESHOLD < 1, got {config.MAP_WATER_THRESHOLD}, "
            f"{config.MAP_GRASS_THRESHOLD}, {config.MAP_FOREST_THRESHOLD}"
        )
    if config.MAP_NOISE_FREQ_MIN > config.MAP_NOISE_FREQ_MAX:
        raise ConfigError(
            f"MAP_NOISE_FREQ_MIN={config.MAP_NOISE_FREQ_MIN} exceeds "
            f"MAP_NOISE_FREQ_MAX={config.MAP_NOISE_FREQ_MAX}"
        )
    if config.MAP_EVAL_SEED_OFFSET < config.MAP_N:
        raise ConfigError(
            f"MAP_EVAL_SEED_OFFSET={config.MAP_EVAL_SEED_OFFSET} must be >= MAP_N={config.MAP_N} "
            "so evaluation maps stay disjoint from training maps"
        )
    if config.has("NPC") and not config.has("Combat"):
        raise ConfigError(f"{config.name} enables NPC without Combat; NPCs need the Combat system")
    if config.has("NPC") and config.NPC_LEVEL_MIN > config.NPC_LEVEL_MAX:
        raise ConfigError(
            f"NPC_LEVEL_MIN={config.NPC_LEVEL_MIN} exceeds NPC_LEVEL_MAX={config.NPC_LEVEL_MAX}"
        )
    if config.has("NPC") and config.NPC_NEUTRAL_DANGER > config.NPC_HOSTILE_DANGER:
        raise ConfigError(
            f"NPC_NEUTRAL_DANGER={config.NPC_NEUTRAL_DANGER} exceeds "
            f"NPC_HOSTILE_DANGER={config.NPC_HOSTILE_DANGER}: neutral NPCs live below the hostile band"
        )
    if config.has("Progression"):
        for key in ("PROGRESSION_BASE_LEVEL", "PROGRESSION_RESOURCE_BASE_LEVEL"):
            if getattr(config, key) > config.PROGRESSION_LEVEL_MAX:
                raise ConfigError(
                    f"{key}={getattr(config, key)} exceeds PROGRESSION_LEVEL_MAX={config.PROGRESSION_LEVEL_MAX}"
                )

