"""Tasks as data (`nmmo.tasks.spec`): shipped sets, file errors naming file, task and field, files
that name Python objects refused, embeddings, and predicates registered in-process and through
the ``nmmo.predicates`` entry-point group (seen by a worker process)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import nmmo
from nmmo.tasks import (
    EMBEDDING_SIZE,
    Predicate,
    TaskState,
    embed,
    load_task_set,
    register,
    registry,
    shipped,
    task_set_from_data,
)
from nmmo.tasks.core import Term
from nmmo.tasks.embedding import predicate_identity

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("combat", "directed", "exploration", "foraging", "heldout", "heldout_v1", "npc_hunting", "team")


def test_shipped_sets_load_and_embed():
    assert set(SHIPPED) <= set(shipped())
    names, vectors = set(), []
    for name in SHIPPED:
        task_set = load_task_set(name)
        assert len(task_set) >= 6 and task_set.name == name
        for spec in task_set:
            assert spec.tags and spec.name not in names
            names.add(spec.name)
            vector = embed(spec)
            assert vector.shape == (EMBEDDING_SIZE,) and vector.dtype == np.float32
            assert np.array_equal(vector, embed(spec))  # deterministic
            vectors.append(vector.tobytes())
    assert len(set(vectors)) == len(vectors)  # every shipped task embeds differently
    for name in ("heldout", "heldout_v1"):
        assert all("heldout" in spec.tags for spec in load_task_set(name))
    directed = {spec.node for spec in load_task_set("directed")}
    assert not directed & {spec.node for spec in load_task_set("heldout")}  # the held-out split is held out


def test_the_shipped_sets_ship_in_the_wheel():
    data = (ROOT / "pyproject.toml").read_text()
    assert '"tasks/*.toml"' in data  # package data of nmmo.configs


def test_a_spec_round_trips_through_its_table():
    for spec in load_task_set("heldout"):
        again = task_set_from_data([spec.to_dict()])[0]
        assert again == spec


def write(tmp_path, text, name="tasks.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize(("body", "field", "says"), [
    ('predicate = "NoSuchPredicate"', "predicate", "unknown predicate 'NoSuchPredicate'"),
    ('predicate = "CountEvent"\nargs = { event = "EAT_FOOD", N = "ten" }', "args.N", "expected an integer"),
    ('predicate = "CountEvent"\nargs = { event = "BUY_ITEM" }', "args.event", "expected one of EAT_FOOD"),
    ('predicate = "CountEvent"\nargs = { N = 2, M = 3 }', "args.M", "has no argument 'M'"),
    ('predicate = "AttainSkill"\nargs = { level = 3 }', "args.skill", "missing"),
    ('predicate = "TickGE"\nreward_to = "everyone"', "reward_to", "expected one of agent, team"),
    ('predicate = "TickGE"\nsubject = "enemies"', "subject", "expected one of agent, team"),
    ('predicate = "TickGE"\ntype = "hold"', "hold", "needs hold > 0"),
    ('predicate = "TickGE"\nweight = -1', "weight", "expected a finite value >= 0"),
    ('predicate = "TickGE"\nreward_to = "team"\nsubject = "agent"', "subject", "names one agent"),
    ('and = [{ predicate = "TickGE" }, { predicate = "Nope" }]', "and[1].predicate", "unknown predicate"),
    ('at_least = 3\nof = [{ predicate = "TickGE" }]', "at_least", "expected an integer in [1, 1]"),
    ('sum = [{ predicate = "TickGE" }]\nweights = [1, 2]', "weights", "expected 1 numbers"),
    ('predicate = "TickGE"\nand = [{ predicate = "TickGE" }]', "predicate", "exactly one of"),
    ('predicate = "TickGE"\nfoo = 1', "foo", "unknown field"),
])
def test_bad_specs_name_the_file_the_task_and_the_field(tmp_path, body, field, says):
    path = write(tmp_path, f'[[task]]\nname = "ok"\npredicate = "TickGE"\n\n[[task]]\nname = "bad"\n{body}\n')
    with pytest.raises(ValueError) as info:
        load_task_set(path)
    message = str(info.value)
    assert message.startswith(f"{path}: task 1 ('bad'): field '{field}': ") and says in message, message


@pytest.mark.parametrize("body", [
    'predicate = "os:system"',
    'predicate = "nmmo.tasks.predicates.CountEvent"',
    'predicate = "TickGE"\neval_fn = "builtins:eval"',
    'and = [{ predicate = "subprocess:run", args = { } }]',
])
def test_a_task_file_naming_a_python_object_is_refused(tmp_path, body):
    path = write(tmp_path, f"[[task]]\n{body}\n")
    with pytest.raises(ValueError, match="names a Python object|unknown field") as info:
        load_task_set(path)
    assert str(path) in str(info.value) and "task 0" in str(info.value)


def test_json_task_files_and_file_level_errors(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"name": "mine", "task": [{"name": "eat", "predicate": "CountEvent",
                                                          "args": {"event": "EAT_FOOD", "N": 3}}]}))
    task_set = load_task_set(path)
    assert task_set.name == "mine" and task_set[0].node.args == (("event", "EAT_FOOD"), ("N", 3))
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_task_set(path)
    with pytest.raises(ValueError, match="not valid TOML"):
        load_task_set(write(tmp_path, "[[task]\n"))
    with pytest.raises(ValueError, match="field 'name': task 0 has it too"):
        load_task_set(write(tmp_path, '[[task]]\nname = "a"\npredicate = "TickGE"\n[[task]]\nname = "a"\n'
                                      'predicate = "TickGE"\n'))
    with pytest.raises(ValueError, match="no task set 'nope'"):
        load_task_set("nope")


def test_embeddings_encode_identity_arguments_subject_and_type():
    a, b, c, d = task_set_from_data([
        {"name": "a", "predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": 10}},
        {"name": "b", "predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": 20}},
        {"name": "c", "predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": 10}, "reward_to": "team"},
        {"name": "d", "predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": 10}, "type": "hold", "hold": 5},
    ])
    vectors = [embed(spec) for spec in (a, b, c, d)]
    assert len({v.tobytes() for v in vectors}) == 4
    renamed = task_set_from_data([{**a.to_dict(), "name": "renamed", "weight": 5.0, "tags": ["x"]}])[0]
    assert embed(renamed).tobytes() == embed(a).tobytes()  # name, weight and tags are not the task
    assert predicate_identity("CountEvent") == registry.BUILTIN_INDEX["CountEvent"] < 32
    assert 32 <= predicate_identity("SomeonesPredicate") < 48


class EatenTwice(Predicate):
    """A test plug-in: the subject ate this tick, twice over (a term)."""

    name = "EatenTwice"

    def term(self, args, config):
        return Term(0, denom=0.5, alive_only=False)  # events column 0 is EAT_FOOD


class Constant(Predicate):
    """A test plug-in evaluated by `progress`: its `value` argument."""

    name = "Constant"
    params = (nmmo.tasks.Param("value", "float", 0.5, 0, 1),)

    def progress(self, ctx, leaves):
        return leaves.args["value"] * 2  # clipped to [0, 1] by the engine


def test_registered_predicates_join_and_keep_the_embedding_size():
    register(EatenTwice)
    register(Constant)
    with pytest.raises(ValueError, match="built-in"):
        register(type("TickGE", (Predicate,), {"name": "TickGE"}))
    config = nmmo.config.Small().set("PLAYER_N", 4)
    env = nmmo.Env(config, seed=0)
    env.reset()
    task_set = task_set_from_data([{"name": "e", "predicate": "EatenTwice"},
                                   {"name": "c", "predicate": "Constant", "args": {"value": 0.25}},
                                   {"name": "big", "predicate": "Constant", "args": {"value": 0.75}}])
    assert embed(task_set[0]).shape == (EMBEDDING_SIZE,)
    tasks = TaskState(task_set, config)
    tasks.reset(env.realm.state, assignment=np.array([0, 1, 2, 0]))
    env.realm.state.entities.events[0, 0] = 1
    step = tasks.evaluate(env.realm.state)
    assert list(step.progress) == [1.0, 0.5, 1.0, 0.0]


PLUGIN = '''
from nmmo.tasks import Predicate, Param

class Stood(Predicate):
    """Progress = the fraction of `ticks` the subject has been on its tile."""
    name = "Stood"
    params = (Param("ticks", "int", 4, 1),)

    def progress(self, ctx, leaves):
        m = leaves.subject
        return m.sum(ctx.ent.tile_ticks[m.slots]) / leaves.args["ticks"]
'''

WORKER = '''
import numpy as np, nmmo
from nmmo.core.actions import NO_OP_ROW
from nmmo.tasks import TaskState, load_task_set
config = nmmo.config.Small().set("PLAYER_N", 4)
env = nmmo.Env(config, seed=0)
env.reset()
tasks = TaskState(load_task_set({path!r}), config)
tasks.reset(env.realm.state, assignment=np.zeros(4, dtype=int))
for _ in range(2):
    env.step_arrays(np.tile(NO_OP_ROW, (4, 1)))
    step = tasks.evaluate(env.realm.state)
print(step.progress.tolist())
'''


def test_a_predicate_registered_through_an_entry_point_works_in_a_worker_process(tmp_path):
    (tmp_path / "my_predicates.py").write_text(PLUGIN)
    info = tmp_path / "my_predicates-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-predicates\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[nmmo.predicates]\nStood = my_predicates:Stood\n")
    task_file = write(tmp_path, '[[task]]\nname = "stand"\npredicate = "Stood"\nargs = { ticks = 4 }\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", WORKER.format(path=str(task_file))], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [0.5, 0.5, 0.5, 0.5]  # everyone stayed put for 2 ticks
