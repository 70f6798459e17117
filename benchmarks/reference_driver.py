"""Throughput of the published nmmo 2.1.1, driven the way `benchmarks/bench_env.py` drives ours.

Runs under the REFERENCE interpreter (`python benchmarks/reference.py` builds it and prints its
path) and imports nothing from this repository but `gc_outside.py` beside it (standard library).
Run it from a directory outside any checkout, so that `import nmmo` finds nmmo 2.1.1
(`benchmarks/reference.py` runs it from a temporary directory):

    cd "$(mktemp -d)" && REF_PYTHON /path/to/benchmarks/reference_driver.py medium 200 --maps DIR

nmmo 2.1.1 through its PettingZoo API: the Medium preset with 128 agents or the Large preset with
1024, its Terrain mixin (which Resource requires there) and the four systems Resource, Combat,
Progression and NPC, agents immortal, one map cached under --maps (generated on the first run;
a Large env then still takes nmmo 2.1.1 about 3 minutes to construct). Every step each agent
moves in a random direction drawn from its own observation's `ActionTargets` mask (the same draw
as bench_env's `random_moves`, same seeds); observations are built every step (the env always
does); only the time inside `env.step` counts, and beside it (`charged agent-steps/s`) that time
plus the garbage collections that ran outside `env.step` (in this driver's own code), as bench_env
reports ours: an env that leaves its collections for later is charged for them.
Prints `reset_s`, `ms_per_step`, `peak_rss_mb`, `gc_outside_ms_per_step`, `charged agent-steps/s`
and, last, `agent-steps/s N`.
"""

import argparse
import resource
import tempfile
import time

import numpy as np
from gc_outside import GcOutside  # beside this script (standard library only)

import nmmo

CASES = {"medium": ("Medium", 128), "large": ("Large", 1024)}  # nmmo 2.1.1's presets (nmmo.config, its core.config)


def make_config(case, maps):
    preset, agents = CASES[case]
    conf = nmmo.config
    base = getattr(conf, preset)

    class Bench(base, conf.Terrain, conf.Resource, conf.Combat, conf.Progression, conf.NPC):
        """The preset with the four systems (and Terrain, which Resource requires in nmmo 2.1.1)."""

    config = Bench()
    config.set("PLAYER_N", agents)
    config.set("IMMORTAL", True)
    config.set("MAP_N", 1)
    config.set("PATH_MAPS", maps)  # absolute: nmmo 2.1.1 joins it to the working directory otherwise
    config.set("MAP_FORCE_GENERATION", False)  # reuse the cached map (2.1.1 regenerates by default)
    return config


def random_moves(obs, rng):
    actions = {}
    for agent, ob in obs.items():
        valid = np.flatnonzero(ob["ActionTargets"]["Move"]["Direction"])
        direction = int(valid[rng.integers(len(valid))]) if len(valid) else 4  # 4: Stay
        actions[agent] = {"Move": {"Direction": direction}}
    return actions


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=list(CASES))
    parser.add_argument("steps", type=int)
    parser.add_argument("--maps", default=None, help="map cache directory (default: a new temporary one)")
    args = parser.parse_args()
    if nmmo.__version__ != "2.1.1":
        raise SystemExit(f"this is nmmo {nmmo.__version__} at {nmmo.__file__}, not nmmo 2.1.1")

    env = nmmo.Env(make_config(args.case, args.maps or tempfile.mkdtemp(prefix="nmmo_ref_maps_")), seed=1)
    start = time.perf_counter()
    obs, _ = env.reset(seed=1)
    reset_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    step_s, agent_steps = 0.0, 0
    outside = GcOutside()
    for _ in range(args.steps):
        actions = random_moves(obs, rng)  # not timed: the figure is the environment's alone
        outside.stepping = True
        start = time.perf_counter()
        obs, *_ = env.step(actions)
        step_s += time.perf_counter() - start
        outside.stepping = False
        agent_steps += len(obs)
    outside.stop()
    print(f"reset_s {reset_s:.3f}")
    print(f"ms_per_step {1e3 * step_s / args.steps:.2f}")
    print(f"peak_rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    print(f"gc_outside_ms_per_step {1e3 * outside.seconds / args.steps:.3f}")
    print(f"charged agent-steps/s {agent_steps / (step_s + outside.seconds):.0f}")
    print(f"agent-steps/s {agent_steps / step_s:.0f}", flush=True)


if __name__ == "__main__":
    main()
