"""Map generation time per map size (one core, no cache). Prints one row per config.

Usage: python benchmarks/bench_mapgen.py [--repeats 3]
"""

import argparse
import time

from rich.console import Console
from rich.table import Table

from nmmo import config
from nmmo.core import world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    table = Table(title="map generation (pure numpy, no cache)")
    for column in ("config", "map", "best s", "mean s", "target s"):
        table.add_column(column, justify="right")
    cases = [("Small", config.Small(), None), ("small_maps", config.load("small_maps"), 0.1),
             ("large_maps", config.load("large_maps"), 3.0)]
    for name, conf, target in cases:
        times = []
        for seed in range(args.repeats):
            start = time.perf_counter()
            world.generate_map(conf, seed)
            times.append(time.perf_counter() - start)
        table.add_row(name, f"{conf.MAP_SIZE}²", f"{min(times):.3f}", f"{sum(times) / len(times):.3f}",
                      "-" if target is None else f"{target}")
    Console().print(table)


if __name__ == "__main__":
    main()
