"""The event log (`nmmo.core.systems.events`, read by `nmmo.tasks.events`): the systems write eating,
drinking, hits, kills, loot, level-ups, new farthest distances and tiles held; it agrees with what
the tick did; it never changes the game; and the fused engine's worlds give the tasks of lone envs."""

import numpy as np
import pytest

import nmmo
from nmmo import config as cfg
from nmmo.core.enums import Event, Material, NPCType, Skill, Style
from nmmo.core.realm import Realm
from nmmo.core.systems import combat, events, resource
from nmmo.core.world import get_map
from nmmo.engines.vector import VectorEnv
from nmmo.tasks import TaskState, load_task_set, task_set_from_data
from nmmo.tasks.events import event_column, life_totals, tick_events

from .systems.helpers import add_npc, add_player, grass_map, make_config, make_state, no_actions


def test_eating_and_drinking_are_logged():
    conf = make_config("Resource")
    material = grass_map(12)
    material[5, 5] = Material.FOREST
    material[8, 9] = Material.WATER
    state = make_state(material, n_players=3)
    add_player(state, 0, 5, 5)  # on a forest
    add_player(state, 1, 8, 8)  # beside water
    add_player(state, 2, 2, 2)
    events.begin_tick(state)
    resource.update(state, conf)
    ev = state.entities.events
    assert list(ev[:3, Event.EAT_FOOD]) == [1, 0, 0] and list(ev[:3, Event.DRINK_WATER]) == [0, 1, 0]


def test_hits_damage_kills_and_loot_are_logged():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2, n_npcs=1)
    add_player(state, 0, 5, 5, levels={Skill.MELEE: 99})
    add_player(state, 1, 5, 7, levels={Skill.MAGE: 1})
    add_npc(state, 2, 5, 6, kind=NPCType.PASSIVE, level=4, health=3)
    state.entities.armour[2] = (6, 2)
    styles, targets = no_actions(3)
    styles[0], targets[0] = Style.MELEE, 2  # a level-99 melee hit kills the NPC
    styles[1], targets[1] = Style.MAGE, 2
    before = events.begin_tick(state)
    log = combat.resolve(state, conf, styles, targets, np.random.default_rng(0))
    events.settle(state, before)
    ev = state.entities.events
    assert ev[0, Event.SCORE_HIT] == ev[0, Event.HIT_MELEE] == ev[0, Event.HIT_NPC] == 1
    assert ev[0, Event.HIT_PLAYER] == 0
    assert ev[0, Event.DAMAGE_DEALT] == 3  # capped at the NPC's health
    assert ev[0, Event.PLAYER_KILL] == ev[0, Event.KILL_NPC] == 1 and ev[0, Event.KILL_PLAYER] == 0
    assert ev[0, Event.KILL_LEVEL] == state.entities.combat_level(np.array([2]))[0]
    assert ev[0, Event.EQUIPMENT_UP] == 1  # looted (6, 2): equipment 4 from 0
    assert ev[1, Event.PLAYER_KILL] == 0 and ev[1, Event.SCORE_HIT] == int(log.hit[log.attackers == 1][0])
    assert np.array_equal(state.entities.event_totals, ev)


def run_realm(config, ticks, seed=0, patch=None):
    """Tick a realm with random moves and attacks; yields (realm, result, levels before) per tick."""
    realm = Realm(config)
    rng = np.random.default_rng(seed)
    realm.reset(get_map(config, 0), rng)
    actions = np.random.default_rng(seed + 1)
    for _ in range(ticks):
        cap = realm.capacity
        levels = realm.state.entities.level.copy()
        directions = actions.integers(0, 5, cap)
        styles = actions.integers(0, 3, cap)
        targets = np.where(actions.random(cap) < 0.7, actions.integers(0, cap, cap), -1)
        yield realm, realm.tick(directions, styles, targets, rng), levels


def small_world() -> cfg.Config:
    world = type("World", (cfg.Small, cfg.Resource, cfg.Combat, cfg.Progression, cfg.NPC), {})
    return world().update({"PLAYER_N": 24, "NPC_N": 16, "HORIZON": 200})


def test_the_log_agrees_with_what_each_tick_did():
    config = small_world()
    seen = np.zeros(len(Event), dtype=np.int64)
    for realm, result, levels in run_realm(config, 150):
        ent, log = realm.state.entities, result.combat
        ev = ent.events
        assert ev[:, Event.SCORE_HIT].sum() == log.hit.sum()
        assert np.array_equal(np.flatnonzero(ev[:, Event.PLAYER_KILL]), np.sort(log.killers))
        kept = np.setdiff1d(np.arange(ent.n_players), result.spawned)  # rows not refilled by a spawn
        gained = ent.level[kept] - levels[kept]
        assert np.array_equal(ev[kept, Event.LEVEL_CONSTITUTION: Event.LEVEL_DEFENSE + 1], gained)
        assert np.array_equal(ev[kept, Event.LEVEL_UP], gained.sum(axis=1))
        assert (ent.tile_ticks[result.spawned] == 0).all()
        seen += (ev != 0).sum(axis=0)
    for name in ("EAT_FOOD", "DRINK_WATER", "GO_FARTHEST", "SCORE_HIT", "HIT_PLAYER", "HIT_NPC", "PLAYER_KILL",
                 "LEVEL_UP"):
        assert seen[event_column(name)] > 0, name
    rows = np.flatnonzero(realm.state.entities.alive)
    totals = life_totals(realm.state, rows)
    assert np.array_equal(totals["GO_FARTHEST"], realm.state.entities.max_explore[rows])  # one record per tile
    out = tick_events(realm.state)
    assert set(out) >= {"row", "id", "tile_ticks", "EAT_FOOD"} and (out["row"] >= 0).all()


def test_tile_ticks_count_the_ticks_on_a_tile():
    config = small_world()
    realm = Realm(config)
    rng = np.random.default_rng(0)
    realm.reset(get_map(config, 0), rng)
    ent = realm.state.entities
    directions = np.full(realm.capacity, 4)
    for tick in range(1, 4):
        realm.tick(directions, *no_actions(realm.capacity), rng)
        assert (ent.tile_ticks[: config.PLAYER_N][ent.alive[: config.PLAYER_N]] == tick).all()


def test_the_log_never_changes_the_game(monkeypatch):
    """Same seed and actions with the writers switched off: every game column is the same."""
    config = small_world()
    with_log = [(r.state.tick, _game_columns(r.state)) for r, _, _ in run_realm(config, 60, seed=3)]
    monkeypatch.setattr(events, "begin_tick", lambda state: events.Before(state.entities.level[:0]))
    for name in ("forage", "combat", "looted", "moved", "explore", "settle"):
        monkeypatch.setattr(events, name, lambda *args: None)
    without = [(r.state.tick, _game_columns(r.state)) for r, _, _ in run_realm(config, 60, seed=3)]
    for (tick, a), (_, b) in zip(with_log, without, strict=True):
        for name in a:
            assert np.array_equal(a[name], b[name]), (tick, name)


def _game_columns(state) -> dict:
    ent = state.entities
    skip = {"events", "event_totals", "tile_ticks"}
    out = {name: getattr(ent, name).copy() for name in vars(ent) if isinstance(getattr(ent, name), np.ndarray)
           and name not in skip}
    return {**out, "material": state.tiles.material.copy(), "occupancy": state.tiles.occupancy.copy()}


@pytest.mark.parametrize("assign", ["agent", "team"])
def test_fused_worlds_give_the_tasks_of_lone_envs(assign):
    """TaskState over K fused worlds (world offsets, teams per world, world ticks) equals K lone ones."""
    config = small_world().update({"PLAYER_N": 8, "NPC_N": 8, "PLAYER_TEAM_SIZE": 2, "HORIZON": 60})
    specs = [spec for name in ("team", "exploration", "combat") for spec in load_task_set(name)]
    task_set = task_set_from_data([spec.to_dict() for spec in specs])
    k, seed = 2, 5
    seeds = np.random.SeedSequence(seed).generate_state(k).tolist()
    rng = np.random.default_rng(0)
    with VectorEnv(config, num_envs=k, seed=seed) as vec:
        obs = vec.reset()
        worlds = vec._impl.block.worlds
        lone = [nmmo.Env(config, seed=s) for s in seeds]
        for env in lone:
            env.reset()
        units = config.PLAYER_N // (2 if assign == "team" else 1)
        assignment = np.arange(k * units) % len(task_set)
        fused = TaskState(task_set, config, assign=assign, n_worlds=k)
        fused.reset(worlds.state, assignment=assignment, world_ticks=worlds.ticks())
        singles = [TaskState(task_set, config, assign=assign) for _ in range(k)]
        for w, single in enumerate(singles):
            single.reset(lone[w].realm.state, assignment=assignment[w * units: (w + 1) * units])
        for _ in range(40):
            actions = np.empty((k * config.PLAYER_N, 3), dtype=np.int64)
            actions[:, 0] = np.argmax(rng.random((len(actions), 5)) * obs["move_mask"], axis=1)
            actions[:, 1] = rng.integers(0, 3, len(actions))
            actions[:, 2] = np.argmax(rng.random(obs["target_mask"].shape) * obs["target_mask"], axis=1)
            obs = vec.step(actions).obs
            got = fused.evaluate(worlds.state, worlds.ticks())
            for w, env in enumerate(lone):
                env.step_arrays(actions[w * config.PLAYER_N: (w + 1) * config.PLAYER_N])
                want = singles[w].evaluate(env.realm.state)
                rows = slice(w * config.PLAYER_N, (w + 1) * config.PLAYER_N)
                assert np.allclose(got.rewards[rows], want.rewards) and np.allclose(got.progress[rows], want.progress)
                assert np.array_equal(got.completed[rows], want.completed)
