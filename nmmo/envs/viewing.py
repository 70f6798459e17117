"""What a viewer sees of an env: `Viewing`, the component through which `nmmo.Env` keeps its heatmap
overlays (`nmmo.replays.overlays`) current and, when it records, its replay (`nmmo.replays.recording`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from nmmo.config import Config
from nmmo.core.state import State
from nmmo.replays.overlays import Overlays
from nmmo.replays.recording import Recorder


class Viewing:
    """An env's overlays and, when recording, its recorder: handed the state tables, the task fields
    and the game's view at each reset and after each tick."""

    def __init__(self, config: Config, state: Callable[[], State | None], record: bool = False) -> None:
        self.config = config
        self.overlays = Overlays(state, config.MAP_BORDER, config.MAP_CENTER)
        self.recorder: Recorder | None = Recorder() if record else None

    @property
    def recording(self) -> bool:
        """Whether the episode is being recorded."""
        return self.recorder is not None

    def record(self) -> None:
        """Record from the next reset on."""
        self.recorder = Recorder()

    def record_values(self, values: dict[int, float]) -> None:
        """Each agent's value estimate on this tick's frame; nothing when not recording."""
        if self.recorder is not None:
            self.recorder.record_values(values)

    def start(self, state: State, columns: Callable[[], dict | None], header: Callable[[], dict],
              game: Callable[[], dict]) -> None:
        """A new episode: the overlays start over, and a recording starts with `header()` (called
        only when recording, as `columns()` and `game()` are each time they are needed)."""
        self.overlays.reset()
        self.overlays.track(state, columns())
        if self.recorder is not None:
            self.recorder.start(state, header(), columns(), game())

    def capture(self, state: State, columns: dict | None, game: Callable[[], dict]) -> None:
        """After a tick: the overlays count it, and the recording gets its frame."""
        self.overlays.track(state, columns)
        if self.recorder is not None:
            self.recorder.capture(state, self.overlays, columns, game())

    def save(self, path: str | os.PathLike, policies: list[str] | None, team_policy: list[int] | None) -> Path:
        """Write the episode recorded so far (see `nmmo.Env.save_replay`)."""
        if self.recorder is None:
            raise ValueError("this env is not recording: pass record=True or call env.record() before reset()")
        self.recorder.name_players(policies, team_policy)
        self.recorder.capture_overlays(self.overlays, len(self.recorder.frames) - 1)
        return self.recorder.save(path)
