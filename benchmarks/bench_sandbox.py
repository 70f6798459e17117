"""How long a submission's worker takes to start: from `start_worker` to the policy built and ready.

A file submission wrapping scripted Forage (written to a temporary directory) is started and
closed `--starts` times back to back; prints the median, the spread and whether the worker ran in
the namespace sandbox, as one JSON line (compare commits with compare_commits.py).

    python benchmarks/bench_sandbox.py [--starts 10]
    python benchmarks/compare_commits.py --refs HEAD . --rounds 3 --key median_start_ms \\
        -- $PWD/benchmarks/bench_sandbox.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=10)
    args = parser.parse_args()
    import nmmo
    from evaluation.sandbox.host import Limits, close_worker, start_worker

    config = nmmo.config.load("tournament")
    seconds, sandboxed = [], None
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "my_forage.py"
        path.write_text("from scripted.forage import Forage\n\n\nclass Agent(Forage):\n    pass\n")
        for _ in range(args.starts):
            start = time.perf_counter()
            worker, kind, message = start_worker(f"{path}:Agent", config, 0, Limits())
            seconds.append(time.perf_counter() - start)
            if worker is None:
                raise SystemExit(f"the worker did not start: {kind}: {message}")
            sandboxed = getattr(worker, "sandboxed", False)
            close_worker(worker)
    ms = [1000 * s for s in seconds]
    print(json.dumps({"median_start_ms": round(statistics.median(ms), 1), "min_ms": round(min(ms), 1),
                      "max_ms": round(max(ms), 1), "starts": args.starts, "sandboxed": sandboxed}))


if __name__ == "__main__":
    main()
