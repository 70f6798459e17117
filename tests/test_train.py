"""Smoke tests of the PPO baseline: two iterations on a tiny config, checkpoints, resume, ckpt: policies."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nmmo  # noqa: E402
from baselines.model import Policy, parameter_count  # noqa: E402
from baselines.ppo import Args, load_checkpoint, read_log, train  # noqa: E402
from nmmo.engines.vector import VectorEnv  # noqa: E402


def tiny_args(out, **overrides):
    # one torch thread: the suite's two workers share two cores (two threads each made the trainings
    # beside another worker take about twice as long)
    base = dict(config="train_small", num_envs=2, rollout_len=8, iterations=2, minibatches=2, epochs=1,
                minutes=5, out=str(out), progress=False, threads=1)
    return Args(**{**base, **overrides})


def test_two_iterations_checkpoint_and_resume(tmp_path):
    summary = train(tiny_args(tmp_path))
    assert summary["iterations"] == 2 and summary["steps"] > 0
    rows = read_log(tmp_path)
    assert len(rows) == 2
    for row in rows:
        for key in ("policy_loss", "value_loss", "entropy"):
            assert math.isfinite(row[key]), (key, row)
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"

    checkpoint = load_checkpoint(tmp_path / "checkpoint.pt")
    model = Policy(**checkpoint["model_kwargs"])
    model.load_state_dict(checkpoint["model"])  # round-trips into a fresh model
    assert checkpoint["step"] == summary["steps"] and checkpoint["iteration"] == 2

    resumed = train(tiny_args(tmp_path, iterations=3, resume=True))
    assert resumed["iterations"] == 3 and resumed["steps"] > summary["steps"]
    assert [r["iteration"] for r in read_log(tmp_path)] == [1, 2, 3]


def test_checkpoint_plays_as_a_policy_and_paints_a_value_overlay(tmp_path):
    train(tiny_args(tmp_path, iterations=1))
    spec = f"ckpt:{tmp_path / 'checkpoint.pt'}"
    policy_class = nmmo.policy.load_policy_class(spec)
    conf = nmmo.config.load("train_small").set("HORIZON", 12)
    env = nmmo.Env(conf, seed=0)
    policy = policy_class(conf)
    obs, _ = env.reset()
    invalid = 0
    while env.agents:
        obs, _, _, _, infos = env.step(policy.act({a: o for a, o in obs.items() if a in env.agents}))
        invalid += sum("invalid_actions" in i for i in infos.values())
    assert invalid == 0 and set(policy.last_values) <= set(range(1, 10**6))

    from nmmo.cli import main

    replay = tmp_path / "value.replay"
    assert main(["run", "--config", "train_small", "--policy", spec, "--ticks", "6", "--record", str(replay),
                 "--value-overlay"]) == 0
    loaded = nmmo.replays.replay.load_replay(replay)
    heat, low, high = loaded.overlay_at("value", 6)
    assert low < high and (heat == 0).mean() > 0.9  # unvisited tiles (most of the map) hold the lowest mean


def test_the_mlp_network_trains_plays_and_is_not_resumed_as_the_lstm(tmp_path):
    """--arch mlp: the recipes' MLP under this loop; its checkpoint plays as ckpt: and names its network."""
    train(tiny_args(tmp_path, iterations=1, arch="mlp", hidden=32))
    kwargs = load_checkpoint(tmp_path / "checkpoint.pt")["model_kwargs"]
    assert kwargs["arch"] == "mlp" and kwargs["fields"] == ["entity", "tile"]
    conf = nmmo.config.load("train_small").set("HORIZON", 6)
    env = nmmo.Env(conf, seed=0)
    policy = nmmo.policy.load_policy_class(f"ckpt:{tmp_path / 'checkpoint.pt'}")(conf)
    obs, _ = env.reset()
    while env.agents:
        obs, _, _, _, infos = env.step(policy.act({a: o for a, o in obs.items() if a in env.agents}))
        assert not any("invalid_actions" in i for i in infos.values())
    assert len(policy.last_values) > 0
    with pytest.raises(ValueError, match="--arch mlp, this run asks for --arch lstm"):
        train(tiny_args(tmp_path, iterations=2, hidden=32, resume=True))


def test_a_checkpoint_named_relative_to_the_working_directory_plays_in_a_tournament(tmp_path, monkeypatch):
    """Submissions run in a directory of their own: a relative ckpt: path must still find its file."""
    from evaluation.tournament import run_tournament

    train(tiny_args(tmp_path, iterations=1))
    monkeypatch.chdir(tmp_path)
    result = run_tournament("train_small", ["ckpt:checkpoint.pt", "idle"], episodes=1, ticks=3, workers=0,
                            progress=False)
    row = next(r for r in result["leaderboard"] if r["policy"] == "ckpt:checkpoint.pt")
    assert not row["failed"] and row["lifetimes"] > 0


def test_saved_and_reloaded_policy_gives_identical_actions_and_values(tmp_path):
    """The trained model in memory, its checkpoint and its exported weights (no optimizer state,
    a fraction of the size) give the same outputs, bit for bit; and as policies, the two files give
    the same actions and values tick after tick for the same seed."""
    from baselines.model import to_tensors
    from baselines.policy import CheckpointPolicy

    summary = train(tiny_args(tmp_path))
    weights = load_checkpoint(summary["weights"])
    assert "optimizer" not in weights and weights["step"] == summary["steps"]
    assert (tmp_path / "weights.pt").stat().st_size < (tmp_path / "checkpoint.pt").stat().st_size / 2
    conf = nmmo.config.load("train_small").set("HORIZON", 16)
    vec = VectorEnv(conf, num_envs=1, seed=3)
    obs = to_tensors(vec.reset())
    trained = summary["model"].eval()
    state, reset = trained.initial_state(vec.rows), torch.zeros(vec.rows)
    with torch.no_grad():
        expected = trained(obs, state, reset)
        for path in (summary["checkpoint"], summary["weights"]):
            reloaded = Policy(**load_checkpoint(path)["model_kwargs"])
            reloaded.load_state_dict(load_checkpoint(path)["model"])
            for a, b in zip(expected[:4], reloaded.eval()(obs, state, reset)[:4], strict=True):
                assert torch.equal(a, b), path

    policies = [CheckpointPolicy(conf, seed=7, path=path) for path in (summary["checkpoint"], summary["weights"])]
    env = nmmo.Env(conf, seed=1)
    observations, _ = env.reset()
    while env.agents:
        live = {a: o for a, o in observations.items() if a in env.agents}
        actions = [policy.act(live) for policy in policies]
        assert actions[0] == actions[1] and policies[0].last_values == policies[1].last_values
        observations, *_ = env.step(actions[0])


def test_vector_env_workers_match_in_process():
    conf = nmmo.config.load("train_small")

    def run(workers):
        rng = np.random.default_rng(0)
        with VectorEnv(conf, num_envs=2, seed=3, workers=workers) as vec:
            obs = vec.reset()
            trace = []
            for _ in range(10):
                actions = np.full((vec.rows, 3), -1)
                actions[:, 0] = np.argmax(rng.random((vec.rows, 5)) * obs["move_mask"], axis=1)
                out = vec.step(actions)
                trace.append((out.obs["entity"].copy(), out.reward.copy(), out.agent_id.copy()))
        return trace

    for (a, b) in zip(run(0), run(1), strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_default_model_size():
    assert 50_000 < parameter_count(Policy()) < 100_000


ENV_FILE = '''
import nmmo


class Bonus(nmmo.Env):
    """Reward 0.5 each step alive, -1 on death."""

    def reward(self, agent_id):
        return 0.5 if agent_id in self.realm.players else -1.0
'''


@pytest.mark.parametrize("workers", [0, 1])
def test_vector_env_builds_the_env_class_a_spec_names(tmp_path, workers):
    (tmp_path / "my_env.py").write_text(ENV_FILE)
    spec = f"{tmp_path / 'my_env.py'}:Bonus"
    with VectorEnv("train_small", num_envs=2, seed=1, workers=workers, env=spec) as vec:
        vec.reset()
        out = vec.step(np.full((vec.rows, 3), -1))
        assert set(out.reward[out.alive].tolist()) == {0.5}


def test_vector_env_rejects_what_it_cannot_build():
    class Local(nmmo.Env):
        pass

    with pytest.raises(ValueError, match="defined in __main__ or a function"):
        VectorEnv("train_small", num_envs=1, workers=1, env=Local)
    with pytest.raises(ValueError, match="is not an nmmo.Env subclass"):
        VectorEnv("train_small", num_envs=1, env="nmmo.policy:Random")
    with pytest.raises(ValueError, match="env class file 'nowhere.py' does not exist"):
        VectorEnv("train_small", num_envs=1, env="nowhere.py:Env")
    with VectorEnv("train_small", num_envs=1, env=Local) as vec:  # in this process any subclass works
        assert type(vec._impl.block.envs[0]) is Local


def test_train_on_a_custom_reward_from_the_cli(tmp_path, monkeypatch):
    (tmp_path / "my_env.py").write_text(ENV_FILE)
    monkeypatch.chdir(tmp_path)
    from nmmo.cli import main

    assert main(["train", "--env", "my_env.py:Bonus", "--resource-reward", "0", "--iterations", "1", "--num-envs",
                 "1", "--out", "run"]) == 0
    (row,) = read_log(tmp_path / "run")
    assert 0.1 < row["reward"] < 0.5  # +0.5 alive, -1 at death; the default reward (0 or -1) has no positive mean
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["args"]["env"] == "my_env.py:Bonus"


def test_a_kill_between_checkpoint_and_log_loses_and_duplicates_no_row(tmp_path):
    """kill -9 after iteration 2's checkpoint and before its log row (the child process wraps the
    trainer's log append, which runs right after the checkpoint is saved, to kill itself there):
    resuming writes row 2 from the checkpoint, and the log holds each iteration exactly once; the
    temporary files a killed write leaves are cleaned when the run starts again."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import os, signal\n"
            "from baselines import ppo\n"
            "append = ppo._append_log\n"
            "def append_or_die(out, row):\n"
            "    if row['iteration'] == 2:\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "    append(out, row)\n"
            "ppo._append_log = append_or_die\n"
            "ppo.train(ppo.Args(config='train_small', num_envs=2, rollout_len=8, iterations=3, minibatches=2, "
            f"epochs=1, out={str(tmp_path)!r}, progress=False))\n")
    killed = subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                            capture_output=True, timeout=300)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    assert load_checkpoint(tmp_path / "checkpoint.pt")["iteration"] == 2
    assert [r["iteration"] for r in read_log(tmp_path)] == [1]
    stale = tmp_path / ".checkpoint.pt.x1y2z3.tmp"
    stale.write_bytes(b"half a checkpoint")
    train(tiny_args(tmp_path, iterations=3, resume=True))
    assert [r["iteration"] for r in read_log(tmp_path)] == [1, 2, 3]
    assert (tmp_path / "log.csv").read_text().count("\n") == 4  # header + 3 rows
    assert not stale.exists()


def test_init_from_a_baseline_starts_as_it_acts_with_a_task_input_added():
    """`--init baseline:small` on a task-conditioned model: every tensor copied, the new task input
    at zero weight, so the outputs equal baseline:small's on the same observations whatever the
    task; a spec that is neither baseline:NAME nor ckpt:PATH is refused, naming it."""
    from baselines.model import to_tensors
    from baselines.ppo import warm_start
    from nmmo.tasks.embedding import EMBEDDING_SIZE

    conf = nmmo.config.load("tournament").set("HORIZON", 4).set("TASKS", "heldout")
    obs = to_tensors(VectorEnv(conf, num_envs=1, seed=3).reset())
    small, tasked = Policy(side=15, hidden=64), Policy(side=15, hidden=64, task_dim=EMBEDDING_SIZE)
    warm_start(small, "baseline:small")
    warm_start(tasked, "baseline:small")
    state, reset = small.initial_state(obs["task"].shape[0]), torch.zeros(obs["task"].shape[0])
    with torch.no_grad():
        for a, b in zip(small(obs, state, reset)[:4], tasked(obs, state, reset)[:4], strict=True):
            assert torch.allclose(a, b, atol=1e-6)
    with pytest.raises(ValueError, match="baseline:nope"):
        warm_start(tasked, "baseline:nope")


def _plays_as_shipped(name: str, trained_in: str, conf) -> dict:
    """A shipped baseline: weights only (no optimizer state, under 1 MB) from `trained_in`, loaded
    through the policy scheme, acting with valid actions and finite values in `conf`, and moving
    (a trained policy, not one that stands still). Returns its weights."""
    from baselines.policy import WEIGHTS_DIR
    from nmmo.policy import load_policy_class

    path = WEIGHTS_DIR / f"{name}.pt"
    assert path.stat().st_size < 1_000_000
    weights = load_checkpoint(path)
    assert "optimizer" not in weights and weights["config_name"] == trained_in
    policy = load_policy_class(f"baseline:{name}")(conf, seed=0)
    env = nmmo.Env(conf, seed=2)
    observations, _ = env.reset()
    moved = False
    while env.agents:
        live = {a: o for a, o in observations.items() if a in env.agents}
        actions = policy.act(live)
        assert set(actions) == set(live)
        for agent, action in actions.items():
            assert live[agent]["ActionTargets"]["Move"]["Direction"][action["Move"]["Direction"]] == 1, agent
        assert set(policy.last_values) == set(live)
        assert all(math.isfinite(v) for v in policy.last_values.values())
        moved |= any(action["Move"]["Direction"] != 4 for action in actions.values())
        observations, *_ = env.step(actions)
    assert moved
    return weights


def test_the_shipped_baseline_loads_and_acts_in_the_canonical_tournament_world():
    """`baseline:small` is in the package and plays the canonical tournament config it was trained
    for (`_plays_as_shipped`); an unknown name says which baselines exist."""
    from nmmo.policy import load_policy_class

    _plays_as_shipped("small", "train_tournament", nmmo.config.load("tournament").set("HORIZON", 8))
    with pytest.raises(ValueError, match="baseline:small"):
        load_policy_class("baseline:large")


def test_the_shipped_task_baseline_reads_tasks_and_plays_with_them():
    """`baseline:tasks` (`--preset tasks`) is in the package and plays the tournament world with
    held-out tasks; its task input was trained (not the zero weights it started from); without
    tasks it says it needs them."""
    from nmmo.policy import load_policy_class

    conf = nmmo.config.load("tournament").set("HORIZON", 8).set("TASKS", "heldout")
    weights = _plays_as_shipped("tasks", "train_tournament_tasks", conf)
    assert weights["model_kwargs"]["task_dim"] > 0 and weights["model"]["task.0.weight"].abs().sum() > 0
    blind = nmmo.config.load("tournament").set("HORIZON", 4)
    observations, _ = nmmo.Env(blind, seed=2).reset()
    with pytest.raises(ValueError, match="task embedding"):
        load_policy_class("baseline:tasks")(blind, seed=0).act(observations)

