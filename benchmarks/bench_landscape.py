"""What a value landscape costs: the critic at every walkable tile of a map (`nmmo.envs.landscape`).

Recording a replay with a `baseline:`/`ckpt:` policy pays this once per episode (the demo's
tournament: once per replay), on the demo's map by default: held-out map 0 of the `tournament`
config, 160². Prints one JSON line: the map, the walkable tiles, the seconds of the first run (a
fresh process's, warm-up included, as a recorded episode pays it), the best and median seconds of
`--repeats` more, the tiles per second, the torch threads, and the landscape's spread (distinct
values, standard deviation / range).

    python benchmarks/bench_landscape.py [--config tournament] [--policy baseline:small] [--repeats 5] [--threads N]
    taskset -c 0,1 python benchmarks/bench_landscape.py   # on 2 cores of a bigger machine
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="tournament", help="config name, preset or TOML path (the demo's)")
    parser.add_argument("--policy", default="baseline:small", help="a policy with value estimates")
    parser.add_argument("--map", type=int, default=0, help="held-out (eval) map index")
    parser.add_argument("--batch", type=int, default=1024, help="standard agents per policy call")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's, one per core)")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    import nmmo
    from nmmo.envs.landscape import standard_cells, value_landscape
    from nmmo.policy import load_policy_class

    config = nmmo.config.resolve(args.config)
    env = nmmo.Env(config, seed=0)
    env.reset(options={"map_seed": nmmo.core.world.map_seed(config, args.map, "eval")})
    policy = load_policy_class(args.policy)(config)
    start = time.perf_counter()
    landscape = value_landscape(policy, env, args.batch, progress=False)  # the first: what an episode pays
    first = time.perf_counter() - start
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        value_landscape(policy, env, args.batch, progress=False)
        seconds.append(time.perf_counter() - start)
    cells = standard_cells(env.material)
    values = landscape[cells[:, 0], cells[:, 1]]
    print(json.dumps({
        "config": config.name, "map": f"{config.MAP_SIZE}x{config.MAP_SIZE}", "policy": args.policy,
        "walkable_tiles": len(cells),
        "first_s": round(first, 3), "best_s": round(min(seconds), 3), "median_s": round(statistics.median(seconds), 3),
        "tiles_per_s": round(len(cells) / statistics.median(seconds)), "torch_threads": torch.get_num_threads(),
        "cpus": len(os.sched_getaffinity(0)), "distinct_values": int(np.unique(values).size),
        "std_over_range": round(float(values.std() / np.ptp(values)), 4)}))


if __name__ == "__main__":
    main()
