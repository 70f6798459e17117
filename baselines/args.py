"""The trainer's hyper-parameters: one dataclass, each field's docstring its `--help`.

`Args` lives apart from the trainer (`baselines.ppo`, which re-exports it) so that the `nmmo`
command can build `nmmo train`'s flags without importing torch. `add_arguments` makes one flag per
field (CleanRL's habit, read from the field docstrings), `args_from` turns parsed flags back into
`Args`.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
from dataclasses import dataclass, field

from nmmo.config.checks import GAME_NAMES

#: Fields whose flags take only these values.
CHOICES = {"task_curriculum": ("", "edge"), "backend": ("process", "ray"), "device": ("cpu", "cuda"),
           "league_sampling": ("uniform", "latest", "rating"),
           "game": GAME_NAMES, "arch": ("lstm", "mlp")}
#: Fields that are not flags (set from Python only).
NOT_FLAGS = ("extra",)


@dataclass
class Args:
    config: str = "train_small"
    """Config name, preset or TOML path of the training envs."""
    game: str = ""
    """Train on a minigame (nmmo.games: race_to_centre, king_of_the_hill, team_battle, protect_the_king,
    sandwich): its canonical config (as --config NAME) with GAME_ADAPTIVE on, the curriculum (king of
    the hill's hold starts short and grows as teams win: nmmo.games.HOLD_SCHEDULE). Empty: no game."""
    tasks: str = ""
    """Train on tasks: a task set's name (foraging, exploration, combat, npc_hunting, team, heldout) or
    a .toml / .json file; every agent draws a task at reset and the network reads its embedding
    (docs/tasks.md). Empty: no tasks."""
    task_curriculum: str = ""
    """How the envs draw the tasks at reset: "" by the specs' weights, "edge" favouring the tasks
    completed about half the time (config key TASK_CURRICULUM, `nmmo.tasks.sampling.EdgeSampler`; each
    env feeds its curriculum its own ended lives). Logged per iteration: task_share/NAME and
    task_completion/NAME in log.jsonl, and OUT/tasks.png."""
    task_blind: bool = False
    """Train on the same tasks and rewards, but give the network no task embedding (task_dim 0): the
    control of a task-conditioned agent; it plays on any config, ignoring the observation's task."""
    env: str | None = None
    """The env class, as pkg.module:Class or path/to/file.py:Class: an `nmmo.Env` subclass with your
    own `reward` (the custom-reward recipe). None: `nmmo.Env` and its default reward."""
    num_envs: int = 8
    """Envs stepped together (8 x 64 slots amortizes per-call overheads: 22k+ agent-steps/s rollouts)."""
    workers: int = 0
    """Env worker processes (0: step them in the trainer's process); with backend "ray", Ray actors."""
    backend: str = "process"
    """Where env workers run: "process" (this machine) or "ray" (Ray actors, local or a cluster)."""
    ray_address: str | None = None
    """An existing Ray cluster for backend "ray" (None: start a local one)."""
    rollout_len: int = 64
    """Ticks per rollout."""
    bptt: int = 16
    """Length of the LSTM sequences the learner replays (a divisor of rollout_len; at most the whole
    rollout): each starts from
    the memory the rollout had there, and sequences without a live agent are skipped."""
    minutes: float = 20.0
    """Wall-clock training budget."""
    total_steps: int = 0
    """Stop after this many agent-steps (0: only the time budget)."""
    iterations: int = 0
    """Stop after this many PPO iterations (0: no limit)."""
    arch: str = "lstm"
    """The network: "lstm" (tile and entity encoders, an LSTM core, a pointer head over the entities:
    `baselines.model.Policy`) or "mlp" (the trainer recipes' feedforward MLP over the flat observation,
    `baselines.model.MLPPolicy`, to compare a recipe's loop with this one on the same network)."""
    hidden: int = 64
    """LSTM hidden size (and width of the fused state); with --arch mlp, the MLP's width."""
    lr: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda (bias/variance of the advantage estimates)."""
    clip: float = 0.2
    """PPO's clipping of the probability ratio."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradients are clipped to this global norm."""
    resource_reward: float = 0.02
    """Shaping: reward per unit of food or water gained by eating or drinking (not by looting), on top
    of the env's -1 at death. 0 trains on the env reward alone, which teaches agents to stand still."""
    epochs: int = 2
    """PPO epochs per rollout."""
    minibatches: int = 4
    """Minibatches per epoch (each a set of whole slot sequences)."""
    minibatch_agent_steps: int = 0
    """When > 0, each epoch has one minibatch per this many live agent-steps of the rollout (at least
    one) instead of `minibatches`: gradient steps per agent-step then stay the same whatever share of
    the slots holds live agents (the experiments compare conditions this way)."""
    seed: int = 0
    """Seed of the envs, the network's initialisation and the minibatch shuffles."""
    device: str = "cpu"
    """Torch device of the network: cpu, or cuda on a GPU machine."""
    threads: int = 2
    """torch threads."""
    out: str = "out/train"
    """Directory for the checkpoint, logs and curves."""
    resume: bool = False
    """Continue from OUT/checkpoint.pt (OUT: --out)."""
    wandb: bool = False
    """Log to Weights & Biases too (offline unless WANDB_MODE says otherwise)."""
    tensorboard: bool = True
    """Write TensorBoard event files to OUT/tensorboard (torch's SummaryWriter; view them with
    `tensorboard --logdir OUT`)."""
    league: bool = False
    """Population play: train against a league of past snapshots and scripted bots (`baselines.league`)."""
    league_sampling: str = "uniform"
    """How each env's opponent is drawn from the league: uniform, latest or rating (matched)."""
    league_snapshot_every: int = 10
    """Iterations between frozen snapshots of the learner joining the league."""
    league_bots: tuple[str, ...] = ("scripted:Forage", "scripted:Combat")
    """Policy specs in the league from the start (scripted:Combat anchors its SR)."""
    init: str = ""
    """Start from a trained policy's weights (baseline:NAME or ckpt:PATH, read weights-only): each
    tensor is copied; a task input the source lacks starts at zero weight, so the run starts by
    acting as the source does (--resume continues from the run's own checkpoint instead). Empty:
    random weights."""
    teacher: str | None = None
    """A policy spec the learner imitates at first (e.g. scripted:Combat): the learner acts, the
    teacher labels the states it visits, and the cross-entropy on its labels joins the PPO loss
    (`baselines.teacher`). None: PPO alone from the start."""
    teacher_coef: float = 1.0
    """Weight of the imitation loss at the start; it falls linearly to 0 over `teacher_steps`."""
    teacher_steps: int = 0
    """Agent-steps over which the imitation weight falls to 0 (0: no teacher, whatever `teacher` says)."""
    teacher_play_steps: int = 0
    """Agent-steps at the start in which the teacher plays: the envs step with its actions and the
    learner learns its labels and the value of its play, without PPO's policy loss (behaviour cloning on
    the teacher's states; the actions are not the learner's). After them the learner plays and the
    teacher labels its states. At most `teacher_steps`; 0: the learner plays from the start."""
    progress: bool = True
    """Show a progress bar (in a terminal)."""
    extra: dict = field(default_factory=dict)
    """Free-form notes stored with the run (not a flag)."""

    def __post_init__(self) -> None:
        if self.game:  # a game plays its canonical config: --game NAME is --config NAME
            from nmmo.cli import game_config

            self.config = game_config(None if self.config == DEFAULT_CONFIG else self.config, self.game, self.game)

    def given_specs(self) -> frozenset[str]:
        """The policy specs this run was given (league bots, teacher): the only ones that import
        code which a league file may name this run (`nmmo.policy.check_spec_from_file`)."""
        return frozenset([*self.league_bots, *([self.teacher] if self.teacher else [])])


DEFAULT_CONFIG = Args.config

#: Recipes (`--preset NAME`): the settings that trained a shipped baseline, so one command repeats it.
PRESETS: dict[str, dict] = {
    "small": {
        "about": "the shipped baseline:small, trained in the canonical tournament's world, imitating "
                 "scripted:Combat for its first 3M agent-steps",
        "args": {"config": "train_tournament", "minutes": 55.0, "minibatches": 16, "threads": 1,
                 "teacher": "scripted:Combat", "teacher_steps": 3_000_000, "out": "out/small"},
    },
    "tasks": {
        "about": "the shipped baseline:tasks: baseline:small's weights with a task input added at zero weight, "
                 "trained in the tournament's world (train_tournament_tasks) on the directed benchmark's train "
                 "split by behaviour cloning: scripted:Follower (which reads each agent's task) plays all its 600k "
                 "agent-steps and the network learns its labels; `nmmo experiment tasks`'s conditioned arm, "
                 "seed 0 (about 15 minutes alone on one core)",
        "args": {"config": "train_tournament_tasks", "tasks": "directed", "task_curriculum": "",
                 "teacher": "scripted:Follower", "teacher_steps": 1_200_000, "teacher_play_steps": 600_000,
                 "lr": 1e-3, "init": "baseline:small",
                 "total_steps": 600_000, "minutes": 24 * 60.0, "num_envs": 5, "minibatch_agent_steps": 1024,
                 "minibatches": 16, "threads": 1, "seed": 0, "out": "out/tasks"},
    },
}


def field_docs() -> dict[str, str]:
    """Each field's docstring (the string literal under it in the class body)."""
    body = ast.parse(inspect.getsource(Args)).body[0].body
    docs = {}
    for node, following in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(following, ast.Expr):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def add_arguments(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """`--preset NAME`, then one flag per `Args` field (but `skip`), its docstring as help and its
    default. A flag left out is absent from the parsed namespace (so `args_from` can tell it from a
    flag given with the default's value: a preset fills the absent ones)."""
    docs = field_docs()
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="a recipe: its values replace the defaults below, flags given replace both ("
                        + "; ".join(f"{name}: {preset['about']}" for name, preset in PRESETS.items()) + ")")
    for f in dataclasses.fields(Args):
        if f.name in NOT_FLAGS or f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        common = {"default": argparse.SUPPRESS, "help": f"{docs[f.name]} (default: {default!r}"
                  + (f"; --preset {' / '.join(n for n, p in PRESETS.items() if f.name in p['args'])} "
                     "changes it" if any(f.name in p["args"] for p in PRESETS.values()) else "") + ")"}
        if f.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **common)
        elif str(f.type).startswith("tuple"):
            parser.add_argument(flag, nargs="+", **common)
        else:
            kind = {"int": int, "float": float}.get(str(f.type).split(" |")[0], str)
            parser.add_argument(flag, type=kind, choices=CHOICES.get(f.name), **common)


def args_from(namespace: argparse.Namespace, **overrides) -> Args:
    """`Args` from parsed flags: the defaults, replaced by the values of ``--preset`` (when given),
    replaced by the flags given, replaced by `overrides`."""
    names = {f.name for f in dataclasses.fields(Args)}
    values = {k: v for k, v in vars(namespace).items() if k in names}
    if isinstance(values.get("league_bots"), list):
        values["league_bots"] = tuple(values["league_bots"])
    preset_name = getattr(namespace, "preset", None)
    preset = dict(PRESETS[preset_name]["args"]) if preset_name else {}
    if preset_name:
        preset["extra"] = {"preset": preset_name}
    if values.get("game"):  # --game NAME is --config NAME: a --config flag must agree, a preset's gives way
        from nmmo.cli import game_config

        values["config"] = game_config(values.get("config"), values["game"], values["game"])
    return Args(**{**preset, **values, **overrides})
