"""The scripted teacher: its labels are the bot's own actions, its memory is one episode's, the
imitation loss reads labels as the heads do, and training with it learns to imitate."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nmmo  # noqa: E402
from baselines.model import NEG  # noqa: E402
from baselines.ppo import read_log, teacher_weight, train  # noqa: E402
from baselines.teacher import Teacher, imitation_loss  # noqa: E402
from nmmo.engines.vector import VectorEnv  # noqa: E402
from scripted.bots import Forage  # noqa: E402
from scripted.memory import UNKNOWN  # noqa: E402
from tests.test_train import tiny_args  # noqa: E402


def heads_favouring(move: list[int], style: list[int], target: list[int]):
    """Logits (move 5, style 3, target 4: 3 entity rows and the no-op) with a margin of 20 on the given choices."""
    logits = []
    for width, chosen in ((5, move), (3, style), (4, target)):
        head = torch.zeros(len(chosen), width)
        head[torch.arange(len(chosen)), torch.tensor(chosen)] = 20.0
        logits.append(head)
    return tuple(logits)


def test_imitation_loss_reads_the_labels_as_the_heads_do():
    labels = torch.tensor([[1, 2, 0], [3, -1, -1]])  # attack row 0 with style 2; move 3 without attacking
    mask = torch.ones(2)
    agree = heads_favouring(move=[1, 3], style=[2, 0], target=[0, 3])  # target 3: the no-op column
    assert imitation_loss(agree, labels, mask) < 1e-6
    wrong_style = heads_favouring(move=[1, 3], style=[0, 0], target=[0, 3])
    assert imitation_loss(wrong_style, labels, mask) == pytest.approx(20 / 2, rel=1e-3)  # row 0's style only
    no_attack_style = heads_favouring(move=[1, 3], style=[2, 1], target=[0, 3])
    assert imitation_loss(no_attack_style, labels, mask) < 1e-6  # style is not taught where nobody attacks
    wrong_move = heads_favouring(move=[1, 0], style=[2, 0], target=[0, 3])
    assert imitation_loss(wrong_move, labels, torch.tensor([1.0, 0.0])) < 1e-6  # masked-out rows teach nothing
    forbidden = heads_favouring(move=[0, 3], style=[2, 0], target=[0, 3])
    forbidden[0][0, 1] = NEG  # the label's move is masked for row 0: it teaches nothing
    assert imitation_loss(forbidden, labels, mask) < 1e-6
    unlabelled = torch.tensor([[-1, -1, -1], [3, -1, -1]])
    assert imitation_loss(wrong_move, unlabelled, mask) == pytest.approx(20, rel=1e-3)  # mean over labelled rows


def test_teacher_labels_are_the_bots_actions_and_each_env_forgets_its_map_on_a_new_episode():
    conf = nmmo.config.load("train_small")
    with VectorEnv(conf, num_envs=2, seed=4) as vec:
        obs = vec.reset()
        ids, alive = vec.buffers["agent_id"].copy(), vec.buffers["alive"].copy()
    teacher = Teacher(conf, "scripted:Forage", num_envs=2, seed=7)
    asked = alive.copy()
    asked[::3] = False
    labels = teacher.label(obs, ids, asked)
    assert (labels[~asked] == -1).all()
    slots = conf.PLAYER_N
    for k in range(2):
        bot = Forage(conf)
        bot.reset(int(np.random.SeedSequence([7, k, 0]).generate_state(1)[0]))
        rows = [r for r in range(k * slots, (k + 1) * slots) if asked[r]]
        expected = bot.act({int(ids[r]): {"Tile": obs["tile"][r], "Entity": obs["entity"][r], "AgentId": int(ids[r]),
                                          "ActionTargets": {"Move": {"Direction": obs["move_mask"][r]},
                                                            "Attack": {"Style": obs["style_mask"][r],
                                                                       "Target": obs["target_mask"][r]}}}
                            for r in rows})
        assert rows and all(labels[r, 0] == expected[int(ids[r])]["Move"]["Direction"] for r in rows)
        assert (labels[rows, 1:] == -1).all()  # Forage never attacks
    assert all((policy.memory.material != UNKNOWN).any() for policy in teacher.policies)
    truncated = np.zeros(2 * slots, bool)
    truncated[slots:] = True  # env 1 reached its horizon: its next rows are a new episode on a new map
    teacher.new_episodes(truncated)
    assert (teacher.policies[0].memory.material != UNKNOWN).any()
    assert (teacher.policies[1].memory.material == UNKNOWN).all()
    assert teacher.episodes.tolist() == [0, 1]


def test_teacher_weight_falls_linearly_to_zero():
    args = tiny_args("unused", teacher="scripted:Combat", teacher_coef=2.0, teacher_steps=1000)
    assert [teacher_weight(args, s) for s in (0, 250, 1000, 5000)] == [2.0, 1.5, 0.0, 0.0]
    assert teacher_weight(tiny_args("unused", teacher="scripted:Combat"), 0) == 0.0  # no teacher_steps: no teacher
    assert teacher_weight(tiny_args("unused", teacher_steps=1000), 0) == 0.0  # no teacher named


def test_bad_teacher_settings_are_refused_naming_them(tmp_path):
    with pytest.raises(ValueError, match="teacher_steps and teacher_coef must be >= 0, got -5"):
        train(tiny_args(tmp_path, teacher="scripted:Combat", teacher_steps=-5))
    with pytest.raises(ValueError, match="scripted:Nobody"):
        train(tiny_args(tmp_path, teacher="scripted:Nobody", teacher_steps=100))


def test_training_with_a_teacher_imitates_it_until_its_weight_runs_out(tmp_path):
    steps_per_iteration = 2 * 64 * 8  # at most: 2 envs x 64 slots x 8 ticks

    def run(out, coef):
        train(tiny_args(out, iterations=10, epochs=4, lr=3e-3, teacher="scripted:Combat", teacher_coef=coef,
                        teacher_steps=8 * steps_per_iteration))
        return read_log(out)

    rows, control = run(tmp_path / "taught", 1.0), run(tmp_path / "control", 1e-9)  # control: labels, no pull
    weights = [row["teacher_weight"] for row in rows]
    assert weights[0] == 1.0 and weights[-1] == 0
    assert all(a > b for a, b in zip(weights[:-1], weights[1:], strict=True) if b > 0)
    for row in rows:
        assert (row["teacher_weight"] > 0) == (row["teacher_s"] > 0) == math.isfinite(row["imitation_loss"])
    taught = [row["imitation_loss"] for row in rows if row["teacher_weight"] > 0]
    untaught = [row["imitation_loss"] for row in control if row["teacher_weight"] > 0]
    assert np.mean(taught[-3:]) < 0.9 * np.mean(untaught[-3:])  # the heads moved toward the teacher's choices


def test_while_the_teacher_plays_the_envs_step_with_its_actions_and_ppo_waits(tmp_path):
    from baselines.ppo import Hook, begin, collect, label_actions, make_hooks, prepare

    args = tiny_args(tmp_path, teacher="scripted:Forage", teacher_steps=10**6, teacher_play_steps=1)
    run = prepare(args)

    class Watch(Hook):  # after the teacher's hook: sees what the envs are stepped with
        def play(self, played, obs, ids, alive):
            self.played.append((played.copy(), alive.copy()))
            return played

    watch = Watch()
    hooks = [*make_hooks(run), watch]
    begin(run)
    for teacher_plays in (True, False):  # the first rollout's steps reach teacher_play_steps: then the learner plays
        watch.played = []
        rollout = collect(run, hooks)
        assert rollout.teacher_plays == teacher_plays and rollout.labels is not None
        for t, (played, alive) in enumerate(watch.played):
            expected = label_actions(rollout.labels[t]) if teacher_plays else rollout.actions[t]
            assert alive.any() and np.array_equal(played[alive], expected[alive])
    run.vec.close()

    train(tiny_args(tmp_path / "run", iterations=3, teacher="scripted:Forage", teacher_steps=10**6,
                    teacher_play_steps=2 * 64 * 8 + 1))  # at most 2 envs x 64 slots x 8 ticks an iteration
    rows = read_log(tmp_path / "run")
    assert [row["teacher_plays"] for row in rows] == [1, 1, 0]
    assert [math.isnan(row["policy_loss"]) for row in rows] == [True, True, False]
    assert all(math.isfinite(row["imitation_loss"]) and math.isfinite(row["value_loss"]) for row in rows)
    with pytest.raises(ValueError, match="teacher_play_steps must be between 0 and teacher_steps"):
        train(tiny_args(tmp_path, teacher="scripted:Forage", teacher_steps=100, teacher_play_steps=101))
    with pytest.raises(ValueError, match="teacher_play_steps needs teacher_coef > 0"):
        train(tiny_args(tmp_path, teacher="scripted:Forage", teacher_steps=100, teacher_play_steps=50, teacher_coef=0))
