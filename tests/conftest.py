import os

import pytest

# One thread per math library in the suite's workers and the commands they start: `make test` runs
# two workers on two cores, and torch's default (a thread per core) in each made them contend
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (its daemons share the machine's 2 cores)."""
    ray = pytest.importorskip("ray", reason="the Ray tests need the [scale] extra (make test installs it)")
    from nmmo.engines import distributed

    distributed.init(num_cpus=2)
    yield ray
    ray.shutdown()


#: Seconds the slowest units took in one run (`pytest -n 2 --dist loadfile --durations=0`, this
#: 2-core VM, 2026-11-29; "ray": every file that uses `ray_session`). They are handed out first,
#: longest first, so that neither worker is left running a long file alone at the end; the other
#: units follow in collection order. Stale figures only cost balance, never a test.
SLOWEST_UNITS = {"tests/test_docs.py": 212, "tests/viewer/test_browser.py": 105, "ray": 88,
                 "tests/test_experiments.py": 71, "tests/test_games_experiment.py": 42, "tests/test_env.py": 37,
                 "tests/test_train.py": 32, "tests/evaluation/test_tournament.py": 29,
                 "tests/evaluation/test_task_eval.py": 27, "tests/test_cli.py": 24}


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: pytest without it runs on
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs `pytest -n 2 --dist loadfile` (pytest-xdist): each test file runs whole on
    one worker, so its module fixtures are built once; here every file that uses `ray_session` is
    one unit as well, so one local Ray starts, not one per worker. (xdist's `--dist loadgroup` and
    `xdist_group` marks would say this, but xdist 3.8 cannot rename pytest 9's node ids: the marks
    are ignored.) The slowest units go first (`SLOWEST_UNITS`)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    ray_files = {path.relative_to(config.rootpath).as_posix()
                 for path in (config.rootpath / "tests").rglob("test_*.py") if "ray_session" in path.read_text()}

    class Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = super()._split_scope(nodeid)
            return "ray" if path in ray_files else path

        def _assign_work_unit(self, node):
            queue = getattr(self, "workqueue", None)  # xdist's own queue: reordered only if it is the one we know
            if queue and hasattr(queue, "move_to_end"):
                slowest = max(queue, key=lambda unit: SLOWEST_UNITS.get(unit, 0))
                if SLOWEST_UNITS.get(slowest, 0):
                    queue.move_to_end(slowest, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)
