"""Tasks (`nmmo.tasks`): every predicate on tiny hand-built worlds, composition, task types, team
rewards, assignment and respawns. Events are written into the log by hand here; the systems'
writing them is tests/test_tasks_events.py's, task files tests/test_tasks_spec.py's."""

import numpy as np
import pytest

from nmmo.core.enums import Event, Material, NPCType, Skill
from nmmo.core.systems.progression import xp_table
from nmmo.tasks import TaskState, task_set_from_data

from .systems.helpers import add_npc, add_player, grass_map, make_config, make_state

SIZE, BORDER, CENTER = 16, 3, 10  # the centre tile is (8, 8)


def world(n_players: int = 4, n_npcs: int = 2, team_size: int = 1, **keys):
    """A 16 x 16 grass map (lava border 3) with every system, vision radius 2."""
    config = make_config(PLAYER_N=n_players, NPC_N=max(n_npcs, 1), PLAYER_TEAM_SIZE=team_size, MAP_BORDER=BORDER,
                         MAP_CENTER=CENTER, PLAYER_VISION_RADIUS=2, HORIZON=100, **keys)
    return config, make_state(grass_map(SIZE, BORDER), n_players, n_npcs)


def players(state, positions, team_size: int = 1, **kwargs):
    for slot, (r, c) in enumerate(positions):
        add_player(state, slot, r, c, team=slot // team_size, **kwargs)


def tasks(config, state, specs, assignment=None, assign="agent"):
    """A TaskState over `specs` (task tables), slot i holding spec i unless `assignment` says."""
    task_set = task_set_from_data([{"name": f"t{i}", **spec} for i, spec in enumerate(specs)])
    state_ = TaskState(task_set, config, assign=assign)
    units = state_.units
    state_.reset(state, assignment=np.arange(units) % len(specs) if assignment is None else np.asarray(assignment))
    return state_


def leaf(predicate, **args):
    return {"predicate": predicate, "args": args}


def progress(config, state, spec, slot=0, ticks=1):
    """Progress of `spec` held by every slot, read at `slot` after `ticks` evaluations."""
    t = tasks(config, state, [spec], assignment=[0] * config.PLAYER_N)
    for _ in range(ticks):
        step = t.evaluate(state)
    return float(step.progress[slot])


# ------------------------------------------------------------------------------------ events
def test_count_event_counts_this_tasks_events_and_rewards_increments():
    config, state = world()
    players(state, [(4, 4), (4, 10), (10, 4), (10, 10)])
    t = tasks(config, state, [leaf("CountEvent", event="EAT_FOOD", N=3)] * 4)
    got = []
    for eats in ([1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]):
        state.entities.events[:4, Event.EAT_FOOD] = eats
        step = t.evaluate(state)
        got.append((round(step.progress[0], 6), round(step.rewards[0], 6), bool(step.completed[0])))
    third = round(1 / 3, 6)
    assert got == [(third, third, False), (round(2 / 3, 6), third, False), (1, round(1 - 2 / 3, 6), True), (1, 0, True)]
    assert step.progress[1] == pytest.approx(1 / 3) and step.rewards[1] == 0  # slot 1 ate once
    assert list(step.task) == [0, 1, 2, 3]  # four copies of the spec, one per slot


def test_count_event_takes_nmmo_2_names_and_sums_a_team():
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (10, 10)], team_size=2)
    t = tasks(config, state, [{**leaf("CountEvent", event="equip_item", N=2), "reward_to": "team"}], assign="team")
    state.entities.events[[0, 1], Event.EQUIPMENT_UP] = 1
    step = t.evaluate(state)
    assert list(step.progress) == [1, 1, 0, 0] and list(step.rewards) == [1, 1, 0, 0]


def test_score_hit_counts_hits_of_its_style():
    config, state = world()
    players(state, [(4, 4)])
    state.entities.events[0, [Event.HIT_MELEE, Event.SCORE_HIT]] = 1
    assert progress(config, state, leaf("ScoreHit", combat_style="Range", N=2)) == 0
    state.entities.events[0, Event.HIT_RANGE] = 1
    assert progress(config, state, leaf("ScoreHit", combat_style="range", N=2)) == 0.5


@pytest.mark.parametrize(("column", "level", "npc_6", "player_0"), [
    (Event.KILL_NPC, 5, 0.0, 0.0), (Event.KILL_NPC, 6, 1.0, 0.0), (Event.KILL_PLAYER, 6, 0.0, 1.0)])
def test_defeat_entity_counts_kills_of_a_kind_and_level(column, level, npc_6, player_0):
    config, state = world()
    players(state, [(4, 4)])
    ev = state.entities.events
    ev[0, [Event.PLAYER_KILL, column]], ev[0, Event.KILL_LEVEL] = 1, level
    assert progress(config, state, leaf("DefeatEntity", agent_type="npc", level=6, num_agent=1)) == npc_6
    assert progress(config, state, leaf("DefeatEntity", agent_type="player", level=0, num_agent=1)) == player_0
    assert progress(config, state, leaf("DefeatEntity", agent_type="npc", level=0, num_agent=0)) == 1.0


# ------------------------------------------------------------------------------------- state
def test_attain_skill_counts_each_member_up_to_the_level():
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (10, 10)], team_size=2)
    state.entities.level[0, Skill.MELEE] = 9
    spec = {**leaf("AttainSkill", skill="Melee", level=5, num_agent=2), "reward_to": "team"}
    assert progress(config, state, spec) == 0.5  # (min(8, 4) + 0) / (2 * 4): one member cannot cover two
    state.entities.level[1, Skill.MELEE] = 5
    assert progress(config, state, spec) == 1.0
    assert progress(config, state, leaf("AttainSkill", skill="Melee", level=1)) == 1.0


def test_gain_experience_counts_xp_since_spawn():
    config, state = world()
    players(state, [(4, 4)])
    state.entities.xp[0, Skill.FISHING] = xp_table()[10] + 250
    assert progress(config, state, leaf("GainExperience", skill="Fishing", experience=1000)) == 0.25


def test_equipment_and_combat_levels():
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (10, 10)], team_size=2)
    state.entities.armour[0] = (3, 4)  # equipment 3.5
    assert progress(config, state, leaf("EquipmentLevel", level=3)) == 1.0
    assert progress(config, state, leaf("EquipmentLevel", level=4)) == 0.0
    state.entities.level[1, [Skill.MELEE, Skill.DEFENSE]] = (20, 10)  # 0.25 * (10 + 10) + 0.5 * 20 = 15
    team = {"reward_to": "team"}
    assert progress(config, state, {**leaf("AttainCombatLevel", level=15, num_agent=2), **team}) == 0.5
    assert progress(config, state, {**leaf("AttainCombatLevel", level=16, num_agent=1), **team}) == 0.0


def test_alive_and_dead_subjects_and_targets():
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (10, 10)], team_size=2)
    state.entities.alive[3] = False  # one foe of team 0 is dead
    team = {"reward_to": "team"}
    assert progress(config, state, {"predicate": "StayAlive", **team}) == 1.0
    assert progress(config, state, {"predicate": "StayAlive", **team}, slot=2) == 0.0
    assert progress(config, state, {"predicate": "AllDead", "subject": "foes", **team}) == 0.5
    assert progress(config, state, {**leaf("CheckAgentStatus", target="foes", status="dead"), **team}) == 0.5
    assert progress(config, state, {**leaf("CheckAgentStatus", target="right_team", status="alive"), **team}) == 0.5
    assert progress(config, state, {**leaf("ProtectLeader"), **team}, slot=2) == 0.0  # slot 2 leads team 1
    state.tick = 50
    assert progress(config, state, {**leaf("ProtectLeader", target_protect="leader"), **team}) == 0.5


def test_tick_ge():
    config, state = world()
    players(state, [(4, 4)])
    state.tick = 25
    assert progress(config, state, leaf("TickGE", num_tick=100)) == 0.25
    assert progress(config, state, leaf("TickGE")) == 0.25  # 0: the horizon (100)
    assert progress(config, state, {"predicate": "Success"}) == 1.0


# ---------------------------------------------------------------------------------- spatial
def test_occupy_tile_distance_and_center():
    config, state = world()
    players(state, [(4, 4)])
    ent = state.entities
    ent.row[0], ent.col[0] = 6, 7  # spawned at (4, 4): Chebyshev 3 away; the centre (8, 8) is 2 away
    assert progress(config, state, leaf("OccupyTile", row=6, col=7)) == 1.0
    assert progress(config, state, leaf("OccupyTile", row=7, col=6)) == 0.0
    assert progress(config, state, leaf("DistanceTraveled", dist=6)) == 0.5
    assert progress(config, state, {"predicate": "ProgressTowardCenter"}) == pytest.approx(1 - 2 / 5)
    ent.alive[0] = False
    assert progress(config, state, {"predicate": "ProgressTowardCenter"}) == 0.0


def test_can_see_tile_of_fixed_and_changing_materials():
    config, state = world()
    material = state.tiles.material
    material[4, 9] = Material.WATER
    material[9, 4] = Material.FOREST
    players(state, [(4, 6), (9, 7)])
    water, forest = leaf("CanSeeTile", tile_type="Water"), leaf("CanSeeTile", tile_type="forest")
    assert progress(config, state, water) == 0.0  # 3 columns away, radius 2
    assert progress(config, state, water, slot=1) == 0.0
    assert progress(config, state, forest, slot=1) == 0.0
    state.entities.col[1] = 6
    assert progress(config, state, forest, slot=1) == 1.0
    material[9, 4] = Material.SCRUB  # harvested
    t = tasks(config, state, [forest], assignment=[0, 0, 0, 0])
    assert t.evaluate(state).progress[1] == 0.0
    state.entities.col[0] = 7
    assert progress(config, state, water) == 1.0


def test_can_see_group_and_agent():
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (6, 6)], team_size=2)
    team = {"reward_to": "team"}
    assert progress(config, state, {**leaf("CanSeeGroup", target="foes"), **team}) == 1.0  # (4, 5) sees (6, 6)
    assert progress(config, state, {**leaf("CanSeeAgent", target="left_team_leader"), **team}) == 0.0  # (10, 4)
    state.entities.alive[3] = False
    assert progress(config, state, {**leaf("CanSeeGroup", target="foes"), **team}) == 0.0


def test_all_members_within_range_and_its_partial_credit():
    config, state = world(team_size=4)
    players(state, [(4, 4), (4, 5), (5, 4), (6, 6)], team_size=4)
    spec = {**leaf("AllMembersWithinRange", dist=2), "reward_to": "team"}
    assert progress(config, state, spec) == 1.0
    state.entities.row[3], state.entities.col[3] = 12, 12
    rows, cols, dist = np.array([4, 4, 5, 12]), np.array([4, 5, 4, 12]), 2
    span = max(np.ptp(rows), np.ptp(cols))
    want = ((CENTER - span) / (CENTER - dist) + dist / max(3 * rows.std(), dist) + dist / max(3 * cols.std(), dist)) / 3
    assert progress(config, state, spec) == pytest.approx(want)


def test_seize_tile_is_held_after_leaving_until_another_team_takes_it():
    config, state = world(team_size=2)
    players(state, [(7, 7), (4, 4), (12, 12), (12, 11)], team_size=2)
    ent = state.entities
    spec = {**leaf("SeizeTile", row=8, col=8, num_ticks=10), "reward_to": "team"}
    t = tasks(config, state, [spec], assign="team", assignment=[0, 0])
    step = t.evaluate(state)
    assert step.progress[0] == pytest.approx(0.4 * (1 - 1 / 5))  # not held: 0.4 * (1 - distance / 5)
    state.tiles.occupancy[7, 7], state.tiles.occupancy[8, 8] = -1, 0
    ent.row[0], ent.col[0], ent.tile_ticks[0] = 8, 8, 0
    state.tick = 1
    assert t.evaluate(state).progress[0] == pytest.approx(0.7)  # seized: 0.4 + 0.3
    state.tick, ent.tile_ticks[0] = 5, 4
    assert t.evaluate(state).progress[0] == pytest.approx(0.7 + 0.3 * 4 / 10)
    state.tiles.occupancy[8, 8], state.tiles.occupancy[12, 12] = -1, 2  # it leaves: the tile stays held
    ent.row[0], ent.col[0] = 4, 5
    state.tick = 6
    assert t.evaluate(state).progress[0] == pytest.approx(0.7 + 0.3 * 5 / 10)
    state.tiles.occupancy[12, 12], state.tiles.occupancy[8, 8] = -1, 3  # a foe steps on it
    ent.row[3], ent.col[3], ent.tile_ticks[3], state.tick = 8, 8, 0, 7
    step = t.evaluate(state)
    assert step.progress[2] == pytest.approx(0.7) and step.progress[0] < 0.4


def test_seize_center_and_quadrant_are_seize_tile_on_their_tile():
    config, state = world()
    players(state, [(8, 8), (10, 10)])
    assert progress(config, state, leaf("SeizeCenter", num_ticks=10)) == pytest.approx(0.6)
    assert progress(config, state, leaf("SeizeQuadCenter", num_ticks=10, quadrant="first"), slot=1) == (
        pytest.approx(0.6))  # (8 + 2, 8 + 2)


# -------------------------------------------------------------------------------- composition
def test_combinations():
    config, state = world()
    players(state, [(4, 4)])
    state.entities.events[0, Event.EAT_FOOD] = 1
    quarter, half, one = (leaf("CountEvent", event="EAT_FOOD", N=n) for n in (4, 2, 1))
    zero = leaf("CountEvent", event="DRINK_WATER", N=1)
    assert progress(config, state, {"and": [half, quarter]}) == 0.25
    assert progress(config, state, {"or": [half, quarter]}) == 0.5
    assert progress(config, state, {"not": half}) == 0.5
    assert progress(config, state, {"sum": [half, quarter]}) == 0.75
    assert progress(config, state, {"sum": [one, half], "weights": [1.0, -1.0]}) == 0.5  # nmmo 2.x's SUB
    assert progress(config, state, {"sum": [one, one]}) == 1.0  # clipped
    assert progress(config, state, {"at_least": 2, "of": [zero, half, one]}) == 0.75  # the mean of the 2 best
    assert progress(config, state, {"at_least": 1, "of": [zero, one]}) == 1.0
    nested = {"and": [{"or": [zero, half]}, {"not": {"and": [zero, one]}}]}
    assert progress(config, state, nested) == 0.5
    # a `not` over a leaf is folded into it: terms, floor terms, batches, rewrites, double negation
    assert progress(config, state, {"not": {"predicate": "StayAlive"}}) == 0.0
    assert progress(config, state, {"not": {"not": {"predicate": "StayAlive"}}}) == 1.0
    assert progress(config, state, {"not": leaf("AllMembersWithinRange", dist=1)}) == 0.0
    assert progress(config, state, {"not": leaf("ProtectLeader")}) == 1.0  # an `and` after its rewrite
    assert progress(config, state, {"sum": [{"not": half}, {"not": one}], "weights": [1.0, 1.0]}) == 0.5


def test_at_least_nodes_of_different_sizes_at_one_height():
    """at_least nodes of one height are one sort on a grid padded to the widest: pads never count."""
    config, state = world()
    players(state, [(4, 4)])
    state.entities.events[0, Event.EAT_FOOD] = 1
    quarter, half, one = (leaf("CountEvent", event="EAT_FOOD", N=n) for n in (4, 2, 1))
    zero = leaf("CountEvent", event="DRINK_WATER", N=1)
    wide, narrow = {"at_least": 2, "of": [zero, half, one]}, {"at_least": 2, "of": [quarter, zero]}
    assert progress(config, state, {"or": [wide, narrow]}) == 0.75
    assert progress(config, state, {"and": [wide, narrow]}) == 0.125


# ---------------------------------------------------------------------------------- task types
def run(config, state, spec, values):
    """(progress, reward, completed) of slot 0 on successive ticks where it eats values[i] times,
    for a CountEvent-based spec."""
    t = tasks(config, state, [spec] * 4)
    out = []
    for eats in values:
        state.entities.events[0, Event.EAT_FOOD] = eats
        step = t.evaluate(state)
        out.append((round(step.progress[0], 6), round(step.rewards[0], 6), bool(step.completed[0])))
    return out


def test_ongoing_rewards_progress_every_tick():
    config, state = world()
    players(state, [(4, 4), (4, 10), (10, 4), (10, 10)])
    spec = {**leaf("CountEvent", event="EAT_FOOD", N=2), "type": "ongoing", "reward": 2.0}
    assert run(config, state, spec, [1, 0, 1, 0]) == [(0.5, 1, False), (0.5, 1, False), (1, 2, True), (1, 2, True)]


def test_an_ongoing_task_is_complete_only_while_it_holds():
    # sandwich's team task: StayAlive (every member alive), ongoing. Completion latched on the first
    # tick, so lives that ended with the team broken read completion 1.00 beside progress 0.00
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (10, 10)], team_size=2)
    spec = {"predicate": "StayAlive", "subject": "team", "reward_to": "team", "type": "ongoing"}
    t = tasks(config, state, [spec], assignment=[0, 0], assign="team")
    step = t.evaluate(state)
    assert list(step.progress) == [1, 1, 1, 1] and list(step.completed) == [True] * 4
    state.entities.alive[1] = False  # team 0 loses a member: its task no longer holds
    step = t.evaluate(state)
    assert list(step.progress) == [0, 0, 1, 1] and list(step.completed) == [False, False, True, True]
    assert list(step.rewards) == [0, 0, 1, 1]


def test_hold_completes_after_consecutive_satisfied_ticks():
    config, state = world()
    players(state, [(4, 4), (4, 10), (10, 4), (10, 10)])
    spec = {"predicate": "OccupyTile", "args": {"row": 4, "col": 4}, "type": "hold", "hold": 3}
    t = tasks(config, state, [spec] * 4)
    ent, got = state.entities, []
    for row in (4, 4, 5, 4, 4, 4, 4):
        ent.row[0] = row
        step = t.evaluate(state)
        got.append((round(step.progress[0], 6), round(step.rewards[0], 6), bool(step.completed[0])))
    third = round(1 / 3, 6)
    assert got == [(third, third, False), (round(2 / 3, 6), third, False), (0, -round(2 / 3, 6), False),
                   (third, third, False), (round(2 / 3, 6), third, False), (1, 1, True), (1, 0, True)]


def test_reward_on_completion_pays_once():
    config, state = world()
    players(state, [(4, 4), (4, 10), (10, 4), (10, 10)])
    spec = {**leaf("CountEvent", event="EAT_FOOD", N=2), "reward_on": "completion"}
    assert [r for _, r, _ in run(config, state, spec, [1, 1, 1])] == [0, 1, 0]


def test_team_task_rewards_every_member_and_agent_task_only_its_agent():
    config, state = world(team_size=2)
    players(state, [(4, 4), (4, 5), (10, 4), (10, 10)], team_size=2)
    team_eat = {**leaf("CountEvent", event="EAT_FOOD", N=1), "reward_to": "team"}
    agent_eat = leaf("CountEvent", event="EAT_FOOD", N=1)
    t = tasks(config, state, [team_eat, agent_eat], assignment=[0, 0, 1, 1])
    state.entities.events[[1, 3], Event.EAT_FOOD] = 1
    step = t.evaluate(state)
    assert list(step.rewards) == [1, 1, 0, 1] and list(step.task) == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="assignment must be 2 task indices"):
        tasks(config, state, [team_eat, agent_eat], assignment=[0, 1, 1, 0], assign="team")


# ---------------------------------------------------------------------- assignment and respawns
def test_assignment_is_drawn_by_weight_and_deterministic():
    config, state = world(n_players=8)
    players(state, [(4, c) for c in range(4, 12)])
    task_set = task_set_from_data([{"name": "a", "predicate": "Success", "weight": 3.0},
                                   {"name": "b", "predicate": "Success", "weight": 1.0},
                                   {"name": "never", "predicate": "Success", "weight": 0.0}])
    draws = []
    for seed in (0, 0, 1):
        t = TaskState(task_set, config)
        t.reset(state, np.random.default_rng(seed))
        draws.append(t.task.copy())
    assert np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[0], draws[2])
    big = TaskState(task_set, config)
    counts = np.zeros(3)
    for seed in range(200):
        big.reset(state, np.random.default_rng(seed))
        counts += np.bincount(big.task, minlength=3)
    assert counts[2] == 0 and 2.5 < counts[0] / counts[1] < 3.5
    with pytest.raises(ValueError, match="Generator"):
        TaskState(task_set, config).reset(state)


def test_a_respawned_agent_starts_its_slots_task_afresh():
    config, state = world()
    players(state, [(4, 4), (4, 10), (10, 4), (10, 10)])
    t = tasks(config, state, [leaf("CountEvent", event="EAT_FOOD", N=2)] * 4)
    ent = state.entities
    ent.events[0, Event.EAT_FOOD] = 1
    assert t.evaluate(state).progress[0] == 0.5
    ent.alive[0], ent.events[0] = False, 0  # dies: evaluated once more, then frozen
    ent.events[0, Event.EAT_FOOD] = 1
    step = t.evaluate(state)
    assert step.progress[0] == 1.0 and step.rewards[0] == 0.5
    ent.events[0, Event.EAT_FOOD] = 0
    assert t.evaluate(state).rewards[0] == 0
    ent.alive[0], ent.id[0] = True, 99  # a new agent in slot 0
    step = t.evaluate(state)
    assert step.progress[0] == 0 and not step.completed[0] and step.task[0] == 0


def test_npcs_are_never_subjects():
    config, state = world()
    players(state, [(4, 4)])
    add_npc(state, 4, 8, 8, kind=NPCType.HOSTILE)
    state.entities.events[4, Event.EAT_FOOD] = 5  # an NPC row's events belong to no task
    assert progress(config, state, leaf("CountEvent", event="EAT_FOOD", N=1)) == 0.0
