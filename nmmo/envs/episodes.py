"""An env's stream of episodes: `Episodes`, the component through which `nmmo.Env` seeds each episode
and picks its map. An episode runs on one seed: a fresh env reset with it (and the same options) and
stepped with the same actions replays the episode exactly."""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.core.world import Map, get_map


class Episodes:
    """Each episode's seed, its generator and its map: the seed given to `begin`, else the env's
    first seed, else one drawn from the last episode's generator (reproducible from the first seed),
    else, for an unseeded env, fresh entropy (still replayable: it is kept in `seed`)."""

    def __init__(self, config: Config, first_seed: int | None = None) -> None:
        self.config, self.first_seed = config, first_seed
        self.seed: int | None = None
        self.rng: np.random.Generator | None = None
        self._maps: dict[int, Map] = {}  # the last map used, kept in memory

    def begin(self, seed: int | None, options: dict | None) -> Map:
        """A new episode: its seed and generator, and its map (drawn from the training pool with the
        generator, or ``options["map_seed"]``, any non-negative seed)."""
        if seed is None and self.rng is None:
            seed = self.first_seed
        if seed is None and self.rng is None:  # unseeded: fresh entropy, still replayable
            seed = int(np.random.SeedSequence().generate_state(2, np.uint64)[0] >> np.uint64(1))
        elif seed is None:  # a fresh episode stream derived from the previous one: reproducible from the first seed
            seed = int(self.rng.integers(2**63))
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        map_seed = int(self.rng.integers(self.config.MAP_N))  # drawn even when overridden: same RNG stream
        if options and options.get("map_seed") is not None:
            requested = options["map_seed"]
            if not isinstance(requested, (int, np.integer)) or isinstance(requested, bool) or requested < 0:
                raise ValueError(f"options['map_seed'] must be a non-negative int, got {requested!r}")
            map_seed = int(requested)
        if map_seed not in self._maps:
            self._maps = {map_seed: get_map(self.config, map_seed)}
        return self._maps[map_seed]
