"""Before/after wall time of the three ways policies get observations: the array batch's acceptance check.

The rule: nothing gets slower. Three workloads are timed on two trees, the commit before the
change (`--before`, a git revision) and the change (`--after`, a directory or a revision; default
the working tree `.`), and each after/before ratio of medians must be 1.05 or less:

1. **tournament**: a short tournament of in-process bots. `evaluation.episode.run_episodes` with
   workers=0 (every episode in the timed process, no pool) of EpisodeTasks built as
   `evaluation.tournament` builds them (`with_horizon`, `equal_shares`, `episode_seeds`,
   `eval_map_seeds`; unsalted deal, no ratings, no output): scripted:Forage, scripted:Combat and
   random on `train_small` (64x64 map, 63 agents in equal shares), 2 episodes of 150 ticks (about 4 s each).
2. **sandbox**: the same with two file submissions (`alice.py:Agent`, `bob.py:Agent`, written to a
   temporary directory: the tutorial's kind of dict policy, a random valid move per agent from
   `observations[agent]["ActionTargets"]`), each run by `make_handle` in a worker process in the
   namespace sandbox (bubblewrap; NMMO_REQUIRE_SANDBOX=1, so a fallback is an error): every
   tick's observations and actions cross the channel. Worker starts are timed (they are part of
   every episode); the spec check before the tournament is not. 2 episodes of 150 ticks.
3. **dict API**: the PettingZoo-style API: `nmmo.Env(config)` on `train_small`, reset, then 500
   `env.step(actions)` with a random valid dict action per agent and per action argument (Move
   and Attack) drawn from the masks; only the time inside `env.step` counts.

Each run of a workload is a fresh subprocess with PYTHONPATH and cwd set to the tree (it prints
where `nmmo`, `evaluation` and `scripted` came from, once, and fails if not from that tree) that
prints one number: the seconds of its timed part (imports, maps and setup are not timed; the maps
are generated into the disk cache first). The runs are interleaved: `--repeats` rounds (default
5), each running every workload on both trees, the tree that goes first alternating between
rounds (this VM drifts). Reports per workload the median before and after, after/before, and each
side's range (min-max, and as a percent of its median); `--json PATH` writes every figure.

A revision is exported with `git archive REV | tar -x` into a temporary directory (no worktree,
no checkout; the viewer's web assets are left out) and byte-compiled once, like the working tree,
so sandboxed workers (read-only, no bytecode writes) load both trees the same way. About 5
minutes with the defaults on 2 cores; `--quick` (1 round, tiny sizes, under 30 s) is a smoke run.

    python benchmarks/bench_batch.py --before 6a77262                 # the array batch vs the commit before
    python benchmarks/bench_batch.py --before 6a77262 --after HEAD --json out/bench_batch.json
    python benchmarks/bench_batch.py --before HEAD --quick            # smoke run: both trees the same code
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nmmo", "evaluation", "scripted", "baselines")
WORKLOADS = ("tournament", "sandbox", "dict_api")
#: What each workload plays: the config, then (episodes, ticks) or (steps,), default and --quick.
CONFIG = "train_small"
SIZES = {"tournament": ((2, 150), (1, 40)), "sandbox": ((2, 150), (1, 40)), "dict_api": ((500,), (50,))}
BOTS = ("scripted:Forage", "scripted:Combat", "random")
LIMIT = 1.05  # the acceptance rule: after/before of the medians at most this

#: The submission file: a tutorial user's dict policy (docs/tutorials/scripted_agent.md's style).
AGENT = '''"""A user's agent: a random valid move for each of its agents."""

import numpy as np


class Agent:
    def __init__(self, config):
        self.rng = np.random.default_rng()

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observations):
        return {agent: {"Move": {"Direction": self.move(ob)}} for agent, ob in observations.items()}

    def move(self, ob):
        choices = np.flatnonzero(ob["ActionTargets"]["Move"]["Direction"])  # STAY is always among them
        return int(self.rng.choice(choices))
'''

#: One workload in a fresh process: argv = tree, workload, config, the sizes, then the spec files.
CHILD = r'''
import os, sys, time
import numpy as np
tree, workload, config_name = sys.argv[1], sys.argv[2], sys.argv[3]
sizes = [int(x) for x in sys.argv[4].split(",")]
import nmmo, evaluation, scripted
for module in (nmmo, evaluation, scripted):
    if not os.path.realpath(module.__file__).startswith(os.path.realpath(tree) + os.sep):
        sys.exit(f"{module.__name__} came from {module.__file__}, not from {tree}")
    print(f"# {module.__name__}: {module.__file__}")
from evaluation.episode import EpisodeTask, episode_seeds, eval_map_seeds, run_episodes, with_horizon

if workload == "dict_api":
    (steps,) = sizes
    config = with_horizon(nmmo.config.resolve(config_name), steps + 1)  # no episode end within the steps
    env = nmmo.Env(config, seed=0)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    seconds = 0.0
    for _ in range(steps):
        actions = {agent: {action: {arg: int(rng.choice(np.flatnonzero(mask))) for arg, mask in args.items()}
                           for action, args in ob["ActionTargets"].items()}
                   for agent, ob in obs.items() if agent in env.agents}
        start = time.perf_counter()
        obs, *_ = env.step(actions)
        seconds += time.perf_counter() - start
        if not env.agents:
            sys.exit("every agent died: the steps are not all of the same load")
else:
    from evaluation.tournament import equal_shares
    episodes, ticks = sizes
    policies = tuple(sys.argv[5:]) if workload == "sandbox" else BOTS
    if workload == "sandbox":
        import shutil
        try:  # the sandbox's sub-package (issue 56), or the flat modules of a tree before it
            from evaluation.sandbox import cgroups, namespaces
            from evaluation.sandbox.host import Limits
        except ImportError:
            from evaluation import cgroups, namespaces
            from evaluation.sandbox import Limits
        from evaluation.submission import check_spec, is_trusted
        assert not any(is_trusted(spec) for spec in policies), policies
        if not namespaces.available():  # NMMO_REQUIRE_SANDBOX=1 raises here instead
            sys.exit(f"no namespace sandbox: {namespaces.unavailable_reason()}")
        print(f"# sandbox: namespace (bubblewrap at {shutil.which('bwrap')}, cgroups {cgroups.detect()})")
        for spec in policies:  # as run_tournament does, before the episodes (not timed)
            check_spec(spec, Limits().init_timeout, Limits())
    config = equal_shares(with_horizon(nmmo.config.resolve(config_name), ticks), len(policies))
    seeds, map_seeds = episode_seeds(0, episodes), eval_map_seeds(config, episodes)
    for map_seed in map_seeds:
        nmmo.world.get_map(config, map_seed)  # generated into the disk cache now, not in the timed part
    text = config.to_toml()
    tasks = [EpisodeTask(index=i, config_text=text, config_name=config.name, policies=policies, seed=s,
                         map_seed=m) for i, (s, m) in enumerate(zip(seeds, map_seeds, strict=True))]
    start = time.perf_counter()
    results = run_episodes(tasks, workers=0, progress=False)
    seconds = time.perf_counter() - start
    faults = [(p, f) for r in results for p, f in zip(policies, r.faults)
              if f.total or f.dropped_actions or f.restarts or f.not_started]
    if faults or any(r.engine_errors for r in results) or any(r.ticks != ticks for r in results):
        sys.exit(f"a run that is not the work asked for: faults {faults}, ticks {[r.ticks for r in results]}")
print(seconds)
'''.replace("BOTS", repr(BOTS))


def export(rev: str, into: Path) -> tuple[str, Path]:
    """(a label, a tree) for `rev`: an existing directory as it is, else the revision exported by
    ``git archive`` into `into`."""
    if Path(rev).is_dir():
        path = Path(rev).resolve()
        return ("working tree" if path == ROOT else str(path)), path
    sha = subprocess.run(["git", "rev-parse", "--verify", "--short=10", f"{rev}^{{commit}}"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
    path = into / sha
    if not path.exists():
        path.mkdir(parents=True)
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(path), "--exclude=client_server/web"], stdin=archive.stdout,
                       check=True)
        archive.stdout.close()
        if archive.wait() != 0:
            raise SystemExit(f"git archive {sha} failed")
    return f"{rev} ({sha})" if rev != sha else sha, path


def compile_tree(path: Path) -> None:
    """Byte-compile the tree's packages, so workers (which write no bytecode) find it on both trees."""
    dirs = [str(path / name) for name in PACKAGES if (path / name).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *dirs], check=True, stdout=subprocess.DEVNULL)


def run_workload(tree: Path, workload: str, sizes: tuple[int, ...], specs: list[str], told: set[str]) -> float:
    """Seconds of one run of `workload` on `tree`, in a fresh process; prints the lines it says
    about itself (where its packages came from, which sandbox) that are not in `told` yet."""
    env = {**os.environ, "PYTHONPATH": str(tree), "NMMO_REQUIRE_SANDBOX": "1"}
    command = [sys.executable, "-c", CHILD, str(tree), workload, CONFIG, ",".join(map(str, sizes)), *specs]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{workload} on {tree} failed (exit {done.returncode}):\n{done.stdout[-1000:]}"
                         f"{done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    for line in lines[:-1]:
        if line not in told:
            told.add(line)
            print(f"  {line.lstrip('# ')}", flush=True)
    return float(lines[-1])


def summary(values: list[float]) -> dict:
    median = statistics.median(values)
    return {"median_s": median, "min_s": min(values), "max_s": max(values),
            "range_pct": 100 * (max(values) - min(values)) / median if median else 0.0, "runs_s": values}


def write_json(path: str, payload: dict) -> None:
    """Write `payload` to `path` atomically (a temporary file in the same directory, then a rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, indent=2)
            f.write("\n")
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="git revision of the baseline (the commit before the change)")
    parser.add_argument("--after", default=".", help="a directory (default: this working tree) or a git revision")
    parser.add_argument("--repeats", type=int, help="interleaved rounds (default 5; 1 with --quick)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round of tiny sizes")
    parser.add_argument("--json", metavar="PATH", help="also write every figure here (JSON)")
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 5)
    sizes = {w: SIZES[w][1 if args.quick else 0] for w in args.workloads}
    scratch = Path(tempfile.mkdtemp(prefix="bench_batch_"))
    try:
        os.chmod(scratch, 0o755)
        trees = [export(args.before, scratch / "trees"), export(args.after, scratch / "trees")]
        for _, path in trees:
            compile_tree(path)
        specs = []
        for name in ("alice", "bob"):
            (scratch / f"{name}.py").write_text(AGENT)
            specs.append(f"{scratch / name}.py:Agent")
        print(f"before: {trees[0][0]} at {trees[0][1]}\nafter:  {trees[1][0]} at {trees[1][1]}\n"
              f"{repeats} round(s) on {CONFIG}: " + ", ".join(f"{w} {sizes[w]}" for w in args.workloads), flush=True)
        runs: dict[str, dict[str, list[float]]] = {w: {"before": [], "after": []} for w in args.workloads}
        told: set[str] = set()
        for round_ in range(repeats):
            order = [("before", trees[0][1]), ("after", trees[1][1])]
            for side, path in order if round_ % 2 == 0 else order[::-1]:
                for workload in args.workloads:
                    seconds = run_workload(path, workload, sizes[workload], specs if workload == "sandbox" else [],
                                           told)
                    runs[workload][side].append(seconds)
                    print(f"round {round_ + 1} {side:6} {workload:10} {seconds:8.3f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    figures = {}
    for workload in args.workloads:
        before, after = summary(runs[workload]["before"]), summary(runs[workload]["after"])
        ratio = after["median_s"] / before["median_s"]
        figures[workload] = {"before": before, "after": after, "ratio": ratio, "ok": ratio <= LIMIT,
                             "sizes": list(sizes[workload])}
    table = Table(title=f"after / before, medians of {repeats} interleaved round(s) on {CONFIG} "
                        f"(accept: ratio <= {LIMIT})")
    for column in ("workload", "before s", "before range", "after s", "after range", "after/before", "ok"):
        table.add_column(column, justify="right")
    for workload, f in figures.items():
        b, a = f["before"], f["after"]
        table.add_row(workload, f"{b['median_s']:.3f}", f"{b['min_s']:.3f}-{b['max_s']:.3f} ({b['range_pct']:.0f} %)",
                      f"{a['median_s']:.3f}", f"{a['min_s']:.3f}-{a['max_s']:.3f} ({a['range_pct']:.0f} %)",
                      f"{f['ratio']:.3f}", "yes" if f["ok"] else "NO")
    Console(width=140).print(table)
    for workload, f in figures.items():
        b, a = f["before"], f["after"]
        print(f"{workload}: before {b['median_s']:.3f} s (range {b['min_s']:.3f}-{b['max_s']:.3f}), after "
              f"{a['median_s']:.3f} s (range {a['min_s']:.3f}-{a['max_s']:.3f}), after/before {f['ratio']:.3f} "
              f"({'ok' if f['ok'] else 'slower than allowed'})")
    if args.json:
        write_json(args.json, {"before": {"rev": args.before, "label": trees[0][0]},
                               "after": {"rev": args.after, "label": trees[1][0]}, "config": CONFIG,
                               "repeats": repeats, "quick": args.quick, "limit": LIMIT, "workloads": figures})


if __name__ == "__main__":
    main()
