import io
import json
import zipfile

import numpy as np
import pytest

import nmmo
import scripted
from nmmo.core.enums import Event
from nmmo.replays.overlays import (
    BUILTIN_BLANK,
    USER_BLANK,
    VALUE_BLANK,
    OverlayError,
    ValueMap,
    add_completions,
    blank_note,
    builtin_names,
    value_heatmap,
)
from nmmo.replays.replay import VERSION, ReplayError, capture, load_replay


def recorded_run(tmp_path, ticks=60):
    conf = nmmo.config.Default().set("PLAYER_N", 32).set("HORIZON", ticks + 5)
    env = nmmo.Env(conf, seed=3, record=True)
    bot = scripted.Combat(conf, 0)
    obs, _ = env.reset()
    frames = [capture(env.realm.state)]
    materials = [env.realm.state.tiles.material.copy()]
    events = [env.realm.state.entities.events.copy()]
    env.overlays.register("mine", np.zeros((conf.MAP_SIZE,) * 2), blank="unset tiles hold 0")
    for t in range(ticks):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
        frames.append(capture(env.realm.state))
        materials.append(env.realm.state.tiles.material.copy())
        events.append(env.realm.state.entities.events.copy())
        if t == 20:
            env.overlays.update("mine", np.arange(conf.MAP_SIZE**2, dtype=float).reshape(conf.MAP_SIZE, -1))
    path = env.save_replay(tmp_path / "run.replay")
    return path, frames, materials, events


def test_replay_round_trip_equals_the_recorded_state(tmp_path):
    path, frames, materials, events = recorded_run(tmp_path)
    replay = load_replay(path)
    assert replay.event_names == [event.name for event in Event]
    logged = np.zeros((len(events), *events[0].shape), dtype=np.int64)
    for tick in range(len(events)):
        slot, code, value = replay.events(tick).T
        logged[tick, slot, code] = value
    assert np.array_equal(logged, np.stack(events))  # the event log, tick by tick
    assert replay.events(1).size and any(replay.events(t)[:, 1].tolist().count(Event.SCORE_HIT)
                                         for t in range(len(events)))
    assert replay.ticks == len(frames) - 1
    for tick, frame in enumerate(frames):
        loaded = replay.frame(tick)
        for name, values in frame.items():
            assert np.array_equal(loaded[name], values), (tick, name)
        assert np.array_equal(replay.material_at(tick), materials[tick])
    data, low, high = replay.overlay_at("mine", 30)
    assert (low, high) == (0.0, float(replay.size**2 - 1)) and data[0, 0] == 0 and data[-1, -1] == 255
    assert replay.overlay_at("mine", 10)[2] == 0.0  # before the update: the zeros
    header = replay.header
    assert header["version"] == VERSION and header["map_seed"] >= 0
    assert "PLAYER_N = 32" in header["config_toml"]
    assert header["overlay_blank"] == {"mine": "unset tiles hold 0"}  # what the legend says of tiles without data


def test_what_tiles_without_data_show_is_read_from_any_header():
    """Replays from before the notes get one by the overlay's name; a hostile header's note is
    taken only as a short string."""
    assert blank_note("visits", None) == BUILTIN_BLANK["visits"]
    assert blank_note("value", {}) == blank_note("value: baseline:small", []) == VALUE_BLANK
    assert blank_note("mine", {"mine": 3}) == blank_note("mine", {"mine": ""}) == USER_BLANK
    assert blank_note("mine", {"mine": "x" * 10_000}) == "x" * 300
    assert blank_note("value", {"value": "recorded"}) == "recorded"


def test_truncated_corrupt_and_newer_files_are_clear_errors(tmp_path):
    path, *_ = recorded_run(tmp_path, ticks=10)
    data = path.read_bytes()
    truncated = tmp_path / "cut.replay"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReplayError, match="truncated or corrupt"):
        load_replay(truncated)
    with pytest.raises(ReplayError, match="does not exist"):
        load_replay(tmp_path / "missing.replay")
    # a newer format version
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = np.load(io.BytesIO(members["header.npy"]))
    meta = json.loads(header.tobytes().decode())
    meta["version"] = VERSION + 1
    buffer = io.BytesIO()
    np.save(buffer, np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    members["header.npy"] = buffer.getvalue()
    newer = tmp_path / "newer.replay"
    with zipfile.ZipFile(newer, "w") as archive:
        for name, blob in members.items():
            archive.writestr(name, blob)
    with pytest.raises(ReplayError, match=f"format v{VERSION + 1}.*upgrade"):
        load_replay(newer)


def test_saving_without_recording_is_an_error(tmp_path):
    env = nmmo.Env(nmmo.config.Small(), seed=0)
    env.reset()
    with pytest.raises(ValueError, match="not recording"):
        env.save_replay(tmp_path / "x.replay")


def test_overlay_api_validates_and_builtins_read_the_state():
    conf = nmmo.config.Default().set("PLAYER_N", 16)
    env = nmmo.Env(conf, seed=0)
    with pytest.raises(OverlayError, match="reset"):
        env.overlays.register("early", np.zeros((4, 4)))
    env.reset()
    size = conf.MAP_SIZE
    with pytest.raises(OverlayError, match=f"must be a {size}x{size} array"):
        env.overlays.register("bad", np.zeros((3, 3)))
    with pytest.raises(OverlayError, match="NaN"):
        env.overlays.register("bad", np.full((size, size), np.nan))
    with pytest.raises(OverlayError, match="register"):
        env.overlays.update("nope", np.zeros((size, size)))
    env.overlays.register("ok", np.ones((size, size)))
    with pytest.raises(OverlayError, match="already exists"):
        env.overlays.register("ok", np.ones((size, size)))
    assert env.overlays.names()[:5] == ["visits", "food", "water", "danger", "skills"]
    assert "tasks done" not in env.overlays.names()  # it needs tasks
    assert [env.overlays.blank(name) for name in env.overlays.names()] == [
        *(BUILTIN_BLANK[name] for name in builtin_names(tasks=False)), USER_BLANK]
    with pytest.raises(OverlayError, match="no overlay named"):
        env.overlays.blank("nope")
    for _ in range(3):
        env.step({})
    visits = env.overlays.get("visits")
    assert visits.sum() == 16 * 4  # every live agent counted on its tile at reset and after 3 ticks
    food = env.overlays.get("food")
    assert food.sum() == (env.realm.state.tiles.material == nmmo.Material.FOREST).sum()
    danger = env.overlays.get("danger")
    centre = conf.MAP_BORDER + conf.MAP_CENTER // 2
    assert danger[centre, centre] > danger[conf.MAP_BORDER, centre] == 0.0


def test_value_heatmap_is_the_mean_per_tile():
    heat = value_heatmap(4, np.array([1, 1, 2]), np.array([1, 1, 3]), np.array([2.0, 4.0, -1.0]))
    assert heat[1, 1] == 3.0 and heat[2, 3] == -1.0 and heat.sum() == 2.0


def test_value_map_accumulates_a_running_mean_and_fills_unvisited_tiles_with_the_lowest():
    tiles = ValueMap(4)
    assert not tiles.heatmap().any()  # nothing seen yet: all 0
    tiles.add(np.array([1, 2]), np.array([1, 3]), np.array([-2.0, -1.0]))
    tiles.add(np.array([1, 0]), np.array([1, 0]), np.array([-4.0, -0.5]))
    heat = tiles.heatmap()
    assert heat[1, 1] == -3.0 and heat[2, 3] == -1.0 and heat[0, 0] == -0.5
    assert heat[3, 3] == -3.0 and (heat == -3.0).sum() == 16 - 2  # unvisited: the lowest mean
    assert tiles.heatmap(fill=7.0)[3, 3] == 7.0


def test_an_older_replay_counts_the_fields_it_lacks_in_its_decoded_size(tmp_path):
    from nmmo.replays.replay import decoded_bytes

    path, frames, *_ = recorded_run(tmp_path, ticks=10)
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files if key not in ("f_hunting", "f_fishing", "entity_events")}
    meta = json.loads(arrays["header"].tobytes())
    arrays["header"] = np.frombuffer(json.dumps({**meta, "version": 1}).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (tmp_path / "v1.replay").write_bytes(buffer.getvalue())
    old = load_replay(tmp_path / "v1.replay")
    assert not old.fields["hunting"].any() and np.array_equal(old.fields["melee"][-1], frames[-1]["melee"])
    assert old.events(1).shape == (0, 3)  # no event log before v3
    new = load_replay(path)
    assert decoded_bytes(tmp_path / "v1.replay") == old.nbytes == new.nbytes - new.entity_events.nbytes  # zeros counted


def recorded_task_run(tmp_path, ticks=120):
    conf = nmmo.config.Default().set("PLAYER_N", 32).set("HORIZON", ticks + 5)
    env = nmmo.Env(conf, seed=2, record=True, tasks="foraging")
    bot = scripted.Forage(conf, 0)
    obs, _ = env.reset()
    frames = [env.frame()]
    for _ in range(ticks):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
        frames.append(env.frame())
    return env, env.save_replay(tmp_path / "tasks.replay"), frames


def test_a_replay_with_tasks_carries_the_task_set_and_every_agents_task(tmp_path):
    env, path, frames = recorded_task_run(tmp_path)
    replay = load_replay(path)
    tasks = replay.header["tasks"]
    assert tasks["name"] == "foraging" and tasks["assign"] == env.config.TASK_ASSIGN
    assert tasks["names"] == [spec.name for spec in env.tasks.tasks]
    assert tasks["specs"] == [spec.to_dict() for spec in env.tasks.tasks]
    n = env.config.PLAYER_N
    for tick, frame in enumerate(frames):  # env.frame() (what live viewers get) is what the replay holds
        for name in ("task", "task_progress", "task_done"):
            assert np.array_equal(replay.frame(tick)[name], frame[name]), (tick, name)
    last = replay.frame(replay.ticks)
    assert np.array_equal(last["task"][:n], env.tasks.task[:n]) and (last["task"][n:] == -1).all()  # NPC rows: none
    step = env.tasking.step
    assert np.array_equal(last["task_progress"][:n], np.rint(step.progress * 1000).astype(np.int16))
    assert np.array_equal(last["task_done"][:n], step.completed.astype(np.int8)) and last["task_done"].any()
    assert (replay.fields["task_progress"] >= 0).all() and (replay.fields["task_progress"] <= 1000).all()
    assert not replay.frame(0)["task_done"].any()  # nothing is done at reset
    # the tasks done overlay: each completion counted once, on the tile where it happened
    assert "tasks done" in env.overlays.names()
    counts = np.zeros((replay.size, replay.size), dtype=np.float32)
    for tick in range(replay.ticks + 1):
        add_completions(counts, replay.frame(tick), replay.frame(tick - 1) if tick else None)
    assert np.array_equal(env.overlays.get("tasks done"), counts)
    assert counts.sum() >= last["task_done"].sum() > 0


def test_a_run_without_tasks_records_no_task(tmp_path):
    path, frames, *_ = recorded_run(tmp_path, ticks=5)
    replay = load_replay(path)
    assert "tasks" not in replay.header
    assert (replay.fields["task"] == -1).all() and not replay.fields["task_done"].any()


def test_an_older_replay_without_task_fields_loads_with_no_task(tmp_path):
    """A v2 file (no event log, no task fields, no tasks in its header) loads: every slot without a
    task (-1), no progress; a hostile header's tasks entry is refused."""
    _, path, frames = recorded_task_run(tmp_path, ticks=10)
    dropped = ("f_task", "f_task_progress", "f_task_done", "entity_events")
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files if key not in dropped}
    meta = json.loads(arrays["header"].tobytes())
    meta.pop("tasks")

    def write(name, header):
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        (tmp_path / name).write_bytes(buffer.getvalue())
        return tmp_path / name

    old = load_replay(write("v2.replay", {**meta, "version": 2}))
    assert (old.fields["task"] == -1).all() and not old.fields["task_progress"].any()
    assert np.array_equal(old.fields["melee"][-1], frames[-1]["melee"]) and "tasks" not in old.header
    with pytest.raises(ReplayError, match="field 'task' is missing"):  # a v3 file must have them
        load_replay(write("v3.replay", {**meta, "version": 3}))
    with pytest.raises(ReplayError, match="'tasks' does not list task names"):
        load_replay(write("bad.replay", {**meta, "version": 2, "tasks": {"names": [1, 2]}}))


def recorded_game_run(tmp_path, name="king_of_the_hill", ticks=40):
    env = nmmo.Env(name, seed=1, record=True)
    bot = scripted.Combat(env.config, 0)
    obs, _ = env.reset()
    states = [env.game_state()]
    for _ in range(ticks):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
        states.append(env.game_state())
        if env.done:
            break
    return env, env.save_replay(tmp_path / f"{name}.replay"), states


def test_a_game_replay_carries_the_game_state_of_every_tick(tmp_path):
    """A minigame's replay names the game in its header and holds `env.game_state()` of every tick;
    a run without a game holds none (and `game_state` says {})."""
    env, path, states = recorded_game_run(tmp_path)
    replay = load_replay(path)
    assert replay.header["game"] == {"name": "king_of_the_hill", "title": "King of the hill"}
    assert replay.ticks == len(states) - 1 and [replay.game_state(t) for t in range(len(states))] == states
    assert states[-1]["tick"] == replay.ticks and states[0]["hold"] == env.config.GAME_HOLD
    assert replay.nbytes > replay.games_nbytes > 0
    with pytest.raises(IndexError):
        replay.game_state(replay.ticks + 1)
    plain = load_replay(recorded_run(tmp_path, ticks=3)[0])
    assert plain.games is None and plain.game_state(3) == {} and "game" not in plain.header


@pytest.mark.parametrize("games, reason", [
    (np.zeros(3, dtype=np.int32), "game states are not bytes"),
    (b"\xff[", "game states are not JSON"),
    (b"[" * 10_000, "game states are not JSON"),  # RecursionError
    (b'{"game": 1}', "not a list of"),
    (b"[{}]", "not a list of"),
    ("many", "over the"),
    ("nested", "not an object of numbers"),
    ("nan", "not an object of numbers"),
    ("long", "not an object of numbers"),
])
def test_a_hostile_game_member_is_refused_clearly(tmp_path, games, reason):
    _, path, states = recorded_game_run(tmp_path, ticks=5)
    frames = len(states)
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    special = {"many": [{"pad": "x" * 100}] * 40 * frames, "nested": [{"centre": [[1, 2]]}] * frames,
               "nan": [{"held": float("nan")}] * frames, "long": [{"title": "x" * 101}] * frames}
    if isinstance(games, str):
        games = json.dumps(special[games]).encode()
    arrays["games"] = np.frombuffer(games, dtype=np.uint8) if isinstance(games, bytes) else games
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (tmp_path / "bad.replay").write_bytes(buffer.getvalue())
    with pytest.raises(ReplayError, match=reason):
        load_replay(tmp_path / "bad.replay")


def test_a_hostile_game_header_is_refused_and_a_file_without_game_states_loads(tmp_path):
    _, path, _ = recorded_game_run(tmp_path, ticks=3)
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files if key != "games"}
    meta = json.loads(arrays["header"].tobytes())

    def write(header):
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        (tmp_path / "edited.replay").write_bytes(buffer.getvalue())
        return tmp_path / "edited.replay"

    assert load_replay(write(meta)).games is None  # older files: no game states
    with pytest.raises(ReplayError, match="'game' is not a game's name and title"):
        load_replay(write({**meta, "game": {"name": ["king"], "title": "x"}}))


def test_game_states_that_would_swell_in_memory_count_against_the_limit(tmp_path):
    """A small file of many empty frames (`{}` parses to a 64-byte dict) is refused by `max_bytes`
    before anything is parsed, and a loaded replay counts its game states at their parsed size."""
    from nmmo.replays.replay import decoded_bytes, games_memory

    _, path, _ = recorded_game_run(tmp_path, ticks=3)
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    meta = json.loads(arrays["header"].tobytes())
    frames = 2_000_000
    meta.update(ticks=frames - 1, slots=0)
    arrays["header"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    for key in [k for k in arrays if k.startswith("f_")]:
        arrays[key] = np.zeros((frames, 0), dtype=arrays[key].dtype)
    arrays["games"] = np.frombuffer(("[" + ",".join(["{}"] * frames) + "]").encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (tmp_path / "swell.replay").write_bytes(buffer.getvalue())
    assert decoded_bytes(tmp_path / "swell.replay") >= games_memory(arrays["games"].nbytes, meta) > 100 * 2**20
    with pytest.raises(ReplayError, match="over the 100 MiB limit"):
        load_replay(tmp_path / "swell.replay", max_bytes=100 * 2**20)
    replay = load_replay(path)
    assert replay.nbytes >= games_memory(1, replay.header)  # the game states are counted


def test_a_replay_whose_entities_stand_off_the_map_is_refused(tmp_path):
    path, *_ = recorded_run(tmp_path, ticks=5)
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    arrays["f_row"] = arrays["f_row"].copy()
    arrays["f_row"][3, 0] = 10_000  # a delta that puts slot 0 far below the map from tick 3 on
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (tmp_path / "off.replay").write_bytes(buffer.getvalue())
    with pytest.raises(ReplayError, match="off the .* map"):
        load_replay(tmp_path / "off.replay")


def test_value_estimates_are_recorded_on_the_frame_the_policy_saw(tmp_path):
    """`env.record_values` stores each agent's estimate (in thousandths) on the frame it was given on,
    the frame the policy acted on; other rows (NPCs, other agents) and older files hold NO_VALUE."""
    from nmmo.replays.replay import NO_VALUE, VALUE_SCALE

    env = nmmo.Env(nmmo.config.load("small_maps").set("PLAYER_N", 8).set("HORIZON", 10), seed=1, record=True)
    env.reset()
    given = []
    for t in range(3):
        values = {agent: 0.25 * agent - t for agent in env.agents[:4]}
        env.record_values({**values, 10**6: 1.0, env.agents[5]: float("nan")})  # unknown and NaN: not stored
        given.append(values)
        env.step({})
    path = env.save_replay(tmp_path / "values.replay")
    replay = load_replay(path)
    assert replay.header["values"] is True
    for tick, values in enumerate(given):
        frame = replay.frame(tick)
        slots = [int(np.flatnonzero(frame["id"] == agent)[0]) for agent in values]
        assert frame["value"][slots].tolist() == [round(v * VALUE_SCALE) for v in values.values()]
        assert (np.delete(frame["value"], slots) == NO_VALUE).all()
    assert (replay.frame(3)["value"] == NO_VALUE).all()

    with np.load(path) as archive:  # a v3 file has no value field: it loads with none
        arrays = {key: archive[key] for key in archive.files if key != "f_value"}
    meta = json.loads(arrays["header"].tobytes())
    arrays["header"] = np.frombuffer(json.dumps({**meta, "version": 3, "values": False}).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (tmp_path / "v3.replay").write_bytes(buffer.getvalue())
    assert (load_replay(tmp_path / "v3.replay").fields["value"] == NO_VALUE).all()
