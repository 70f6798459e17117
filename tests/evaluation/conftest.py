import os
import textwrap
from pathlib import Path

import pytest

from nmmo import config as cfg


class SmallRC(cfg.Small, cfg.Resource, cfg.Combat):
    """Small with Resource and Combat: what the tournament tests play on."""


def small_config(**keys) -> cfg.Config:
    """Small + Resource + Combat with few agents, so episodes take milliseconds."""
    conf = SmallRC()
    conf.set("PLAYER_N", 16)
    for key, value in keys.items():
        conf.set(key, value)
    return conf


def write_policy(directory: Path, name: str, body: str) -> str:
    """Write a submission file and return its spec (file.py:Agent)."""
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return f"{path}:Agent"


@pytest.fixture(scope="session", autouse=True)
def map_cache(tmp_path_factory):
    """Keep generated maps out of the home directory; worker processes inherit the variable."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NMMO_CACHE_DIR", str(tmp_path_factory.mktemp("nmmo_cache")))
        yield


CRASHING = """
    class Agent:
        def __init__(self, config):
            self.calls = 0

        def act(self, observations):
            self.calls += 1
            if self.calls % 2 == 0:
                raise RuntimeError("boom on an even call")
            return {agent: {"Move": {"Direction": 4}} for agent in observations}
"""

HANGING = """
    import time

    class Agent:
        def __init__(self, config):
            pass

        def act(self, observations):
            tick = next(iter(observations.values()))["CurrentTick"]
            if tick == 2:
                time.sleep(30)  # far past any budget: the worker must be killed
            return {agent: {"Move": {"Direction": 4}} for agent in observations}
"""

GARBAGE = """
    import numpy as np

    class Agent:
        def __init__(self, config):
            self.calls = 0

        def act(self, observations):
            self.calls += 1
            agents = list(observations)
            kind = self.calls % 5
            if kind == 1:
                return "not a dict"
            if kind == 2:  # float index, a string action, an agent it does not control, a bool
                out = {agents[0]: {"Move": {"Direction": 1.5}}, 10**9: {"Move": {"Direction": 1}}}
                out.update({agent: "north" for agent in agents[1:2]})
                out.update({agent: {"Move": {"Direction": True}} for agent in agents[2:3]})
                return out
            if kind == 3:  # unknown keys and a missing Target
                return {agent: {"Move": {"Direction": 1}, "Attack": {"Style": 0}, "Jump": 1} for agent in agents}
            if kind == 4:
                return None
            return {agent: {"Move": {"Direction": np.int64(4)}} for agent in agents}  # well-formed
"""


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
