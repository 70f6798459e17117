"""Value-function overlays of a recorded evaluation episode (what `nmmo tournament --record` paints)."""

from __future__ import annotations

import nmmo
from nmmo.envs.landscape import NAME as LANDSCAPE


class ValueOverlays:
    """Value-function overlays of a recorded episode, for each in-process policy that exposes value
    estimates (a trained checkpoint's `last_values`): its value landscape (`nmmo.envs.landscape`: the
    critic at every walkable tile for one standard agent, painted once on the first frame by an
    instance of the policy of its own) named ``value landscape``, and the mean estimate per tile
    of its agents so far (`ValueMap`) named ``value`` (``value: SPEC``, ``value landscape: SPEC``
    when several policies have one), and each agent's own estimate on every frame
    (`nmmo.Env.record_values`: the viewer's inspector shows it). The mean is refreshed every
    `every` ticks, which keeps replays small (each refresh stores a map-sized layer)."""

    def __init__(self, env: nmmo.Env, handles: list, every: int = 16) -> None:
        from nmmo.replays.overlays import ValueMap

        self.env, self.every = env, every
        self.policies = [p for p, handle in enumerate(handles) if getattr(handle, "last_values", None) is not None]
        self.handles = handles
        several = len(self.policies) > 1
        self.names = {p: f"value: {handles[p].spec}" if several else "value" for p in self.policies}
        self.maps = {p: ValueMap(env.config.MAP_SIZE) for p in self.policies}
        for p in self.policies:
            self.paint_landscape(handles[p].spec, f"{LANDSCAPE}: {handles[p].spec}" if several else LANDSCAPE)

    def paint_landscape(self, spec: str, name: str) -> None:
        """The landscape of the policy `spec`, by a fresh instance (the playing one keeps its memory);
        quietly: episodes run in worker processes, whose lines would interleave."""
        from evaluation.submission import load_trusted
        from nmmo.envs.landscape import paint_landscape

        paint_landscape(self.env, load_trusted(spec)(self.env.config), name, progress=False)

    def add(self, seen: list, tick: int) -> None:
        """Add this tick's estimates of each policy's agents (`seen`: what each policy observed); the
        overlay appears with the first estimates, so a replay shows it from its first tick."""
        from nmmo.replays.overlays import VALUE_BLANK

        for p in self.policies:
            self.maps[p].add_observed(seen[p], self.handles[p].last_values or {})
            self.env.record_values(self.handles[p].last_values or {})  # each agent's own, for the inspector
            if self.names[p] not in self.env.overlays.user_names():
                self.env.overlays.register(self.names[p], self.maps[p].heatmap(), blank=VALUE_BLANK)
            elif tick % self.every == 0 or tick + 1 >= self.env.config.HORIZON:  # the last tick is recorded too
                self.env.overlays.update(self.names[p], self.maps[p].heatmap())
