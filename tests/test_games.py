"""Minigames (`nmmo.games`): each canonical config plays, wins end episodes, the small rules act
(kings fall with their teams, the fog closes and pushes NPCs), and king of the hill's hold
follows its schedule in training and stays fixed otherwise."""

import numpy as np
import pytest

import nmmo
from nmmo.config import ConfigError, checks
from nmmo.games import GAMES, HOLD_SCHEDULE
from nmmo.games.battle import FOG_TICKS_PER_TILE
from nmmo.games.core import by_name


def put(env: nmmo.Env, slot: int, row: int, col: int) -> None:
    """Move a live player to a free tile (a test's hand on the state)."""
    state = env.realm.state
    ent, tiles = state.entities, state.tiles
    occupant = tiles.occupancy[row, col]
    assert occupant < 0 or occupant == slot
    tiles.occupancy[ent.row[slot], ent.col[slot]] = -1
    ent.row[slot], ent.col[slot] = row, col
    tiles.occupancy[row, col] = slot


def test_every_game_has_a_canonical_config_that_plays():
    assert tuple(GAMES) == checks.GAME_NAMES
    for name in GAMES:
        env = nmmo.Env(name, seed=0)
        obs, infos = env.reset()
        assert env.game.name == name and env.config.TASK_ASSIGN == "team" and obs
        assert all("task" in info for info in infos.values())  # the game's team task
        env.step({})
        state = env.game_state()
        assert state["game"] == name and len(state["alive"]) == env.game.n_teams
    with pytest.raises(ConfigError, match="not a minigame"):
        nmmo.config.resolve("team_battle").set("GAME", "chess").validate()
    with pytest.raises(ValueError, match="brings its own team tasks"):
        nmmo.Env("team_battle", tasks="foraging")


def test_the_games_are_built_from_the_config_list_and_a_mismatch_fails():
    """`GAMES` follows `GAME_NAMES` (the config layer's one list); a name without a class, a class
    the list lacks, or two classes of one name is an error at import, not a silent drift."""
    classes = tuple(GAMES.values())
    assert by_name(checks.GAME_NAMES, classes) == GAMES
    chess = type("Chess", (classes[0],), {"name": "chess"})
    with pytest.raises(ValueError, match=r"names without a class \['chess'\]"):
        by_name((*checks.GAME_NAMES, "chess"), classes)
    with pytest.raises(ValueError, match=r"classes not listed \['chess'\]"):
        by_name(checks.GAME_NAMES, (*classes, chess))
    with pytest.raises(ValueError, match="1 class\\(es\\) sharing a name"):
        by_name(checks.GAME_NAMES, (*classes, classes[0]))


def test_the_first_team_on_the_centre_wins_the_race_and_the_episode_ends():
    env = nmmo.Env("race_to_centre", seed=0)
    env.reset()
    centre = env.game.center
    put(env, 9, centre, centre)  # slot 9 is in team 2
    live = set(env.agents)
    obs, rewards, terminations, truncations, infos = env.step({})
    assert env.game_over and env.done and env.game_winners().tolist() == [2]
    assert all(truncations[a] or terminations[a] for a in live) and env.agents == []
    with pytest.raises(RuntimeError, match="the game won"):
        env.step({})


def test_a_king_falls_with_his_team():
    env = nmmo.Env("protect_the_king", seed=0)
    env.reset()
    state = env.realm.state
    ent = state.entities
    ent.health[4], ent.food[4], ent.water[4] = 1, 0, 0  # team 1's king (slot 4) starves to death this tick
    env.step({})
    assert not state.entities.alive[4:8].any() and state.entities.alive[0:4].all()
    assert env.game_state()["king_alive"][1] == 0


def test_the_fog_closes_hurts_players_and_pushes_npcs_in():
    env = nmmo.Env(nmmo.config.resolve("sandwich").set("GAME_FOG_ONSET", 0), seed=0)  # fog before starvation
    env.reset()
    game, config = env.game, env.config
    start = config.MAP_CENTER // 2
    assert game.radius(0) == start == game.radius(config.GAME_FOG_ONSET)
    assert game.radius(config.GAME_FOG_ONSET + 3 * FOG_TICKS_PER_TILE) == start - 3
    assert game.radius(10**6) == config.GAME_FOG_FINAL
    state, n = env.realm.state, config.PLAYER_N
    ent = state.entities

    def outside(rows: np.ndarray, tick: int) -> np.ndarray:
        return np.maximum(np.abs(ent.row[rows] - game.center), np.abs(ent.col[rows] - game.center)) > game.radius(tick)

    hurt = pushed = away = 0
    while not env.done and state.tick < config.GAME_FOG_ONSET + 16 * FOG_TICKS_PER_TILE:
        tick, players, npcs = int(state.tick), np.flatnonzero(ent.alive[:n]), n + np.flatnonzero(ent.alive[n:])
        caught, health = players[outside(players, tick)], ent.health.copy()
        squeezed = npcs[outside(npcs, tick)]
        distance = np.maximum(np.abs(ent.row[squeezed] - game.center), np.abs(ent.col[squeezed] - game.center))
        env.step({})
        assert (ent.health[caught] < health[caught]).all()  # nobody heals in the fog
        hurt += caught.size
        after = np.maximum(np.abs(ent.row[squeezed] - game.center), np.abs(ent.col[squeezed] - game.center))
        pushed, away = pushed + int((after < distance).sum()), away + int((after > distance).sum())
    assert hurt and pushed > 2 * away  # the NPCs' own moves go any way; the fog line pushes them in
    env.reset()
    npcs = n + np.flatnonzero(ent.alive[n:])
    before = np.maximum(np.abs(ent.row[npcs] - game.center), np.abs(ent.col[npcs] - game.center))
    game._push_npcs(state, npcs)  # the rule alone: one tile in where free, occupancy kept
    after = np.maximum(np.abs(ent.row[npcs] - game.center), np.abs(ent.col[npcs] - game.center))
    moved = after != before
    assert moved.any() and (after[moved] == before[moved] - 1).all()
    assert (state.tiles.occupancy[ent.row[npcs], ent.col[npcs]] == npcs).all()


def test_king_of_the_hill_holds_follow_the_schedule_only_in_training():
    adaptive = nmmo.config.resolve("king_of_the_hill").set("GAME_ADAPTIVE", True)
    env = nmmo.Env(adaptive, seed=0)
    holds = []
    for _ in range(6):  # six won episodes: the hold moves up every HOLD_SCHEDULE["wins"] wins
        env.reset()
        holds.append(env.game.hold)
        assert env.tasks.tasks[0].name == f"seize_center_{env.game.hold}"  # the task follows the game
        put(env, 0, env.game.center, env.game.center)  # team 0 seizes the hill on the first tick
        while not env.done:
            env.step({})
        assert env.game_winners().tolist() == [0] and env.game_over
    start, step = HOLD_SCHEDULE["start"], HOLD_SCHEDULE["step"]
    assert holds == [start, start, start + step, start + step, start + 2 * step, start + 2 * step]
    fixed = nmmo.Env("king_of_the_hill", seed=0)
    for _ in range(3):
        fixed.reset()
        assert fixed.game.hold == fixed.config.GAME_HOLD
        put(fixed, 0, fixed.game.center, fixed.game.center)
        while not fixed.done:
            fixed.step({})
        # seized on tick 1, held GAME_HOLD ticks: won on tick GAME_HOLD + 1
        assert fixed.game_winners().tolist() == [0] and fixed.tick == fixed.config.GAME_HOLD + 1


def test_tournaments_play_every_episode_at_the_fixed_hold():
    from evaluation.episode import with_horizon

    adaptive = nmmo.config.resolve("king_of_the_hill").set("GAME_ADAPTIVE", True)
    assert not with_horizon(adaptive, 50).GAME_ADAPTIVE  # what evaluate and run_tournament play
    env = nmmo.Env(with_horizon(adaptive, 50), seed=0)
    for _ in range(3):
        env.reset()
        assert env.game.hold == adaptive.GAME_HOLD
        put(env, 0, env.game.center, env.game.center)
        while not env.done:
            env.step({})


def test_a_vector_env_mixes_games_for_a_generalist():
    from nmmo.engines.vector import VectorEnv

    mix = ",".join(GAMES)
    config = nmmo.config.resolve("race_to_centre").set("GAME_MIX", mix)
    with VectorEnv(config, num_envs=len(GAMES) + 1, seed=0) as vec:
        obs = vec.reset()
        assert [env.game.name for env in vec._impl.block.envs] == [*GAMES, "race_to_centre"]
        tasks = obs["task"].reshape(vec.num_envs, vec.slots, -1)[:, 0]
        assert len({row.tobytes() for row in tasks[: len(GAMES)]}) == len(GAMES)  # each game's task shows
        out = vec.step(np.zeros((vec.rows, 3), dtype=np.int64))
        assert out.reward.shape == (vec.rows,)
    with pytest.raises(ConfigError, match="GAME_MIX"):
        nmmo.config.resolve("race_to_centre").set("GAME_MIX", "race_to_centre,chess").validate()


def test_a_game_passes_pettingzoos_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(nmmo.Env("protect_the_king", seed=0), num_cycles=300)


def test_a_mix_keeps_the_training_settings_and_win_needs_a_game(tmp_path):
    from evaluation.tournament import run_tournament
    from nmmo.engines.blocks import member_configs

    config = nmmo.config.resolve("race_to_centre").update(
        {"GAME_MIX": "race_to_centre,sandwich", "GAME_ADAPTIVE": True, "TASK_REWARD": 2.0, "PATH_MAPS": str(tmp_path)})
    members = member_configs(config, 1, 2)
    assert [m.GAME for m in members] == ["sandwich", "race_to_centre"]
    assert all(m.GAME_ADAPTIVE and m.TASK_REWARD == 2.0 and m.PATH_MAPS == str(tmp_path) for m in members)
    assert members[0].HORIZON == nmmo.config.resolve("sandwich").HORIZON  # the rest is the game's own
    with pytest.raises(ValueError, match="'win' needs a minigame"):
        run_tournament("train_small", ["random"], episodes=1, ticks=5, workers=0, progress=False, metric="win")
    with pytest.raises(ConfigError, match="PLAYER_RESPAWN = false"):
        nmmo.config.resolve("protect_the_king").set("PLAYER_RESPAWN", True).validate()


def test_a_replay_refuses_to_record_game_states_a_reader_would_refuse(tmp_path, monkeypatch):
    from nmmo.replays.replay import ReplayError

    env = nmmo.Env("race_to_centre", seed=0, record=True)
    env.reset()
    monkeypatch.setattr(env.game, "state", lambda state: {"alive": list(range(2000))})  # > 1024 entries a list
    env.step({})
    with pytest.raises(ReplayError, match="cannot hold this game's states"):
        env.save_replay(tmp_path / "big.replay")
    assert not (tmp_path / "big.replay").exists()
