"""Procedural maps: generation, map pools by seed, the on-disk cache, stats and previews.

A map is an S x S grid of materials (S = MAP_CENTER + 2 * MAP_BORDER). The playable square in the
middle is multi-octave gradient noise thresholded into materials; everything outside it is lava.
The playable square's outer ring is grass (the spawn band) and the ring inside it has no water or
stone, so every spawn tile connects to every other and to food and water.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nmmo.config import Config, ConfigError
from nmmo.core.enums import MATERIAL_COLORS, Material
from nmmo.core.noise import gradient_noise, normalize
from nmmo.core.rules import WALKABLE, flat_neighbours, ring_tiles, water_adjacent
from nmmo.io.files import atomic_write_bytes, remove_stale_temps

#: Bump when generation changes so cached maps of the old generator are never reused.
GENERATOR_VERSION = 3
#: The noise stream's seed prefix, kept at generator 2's so that maps keep their layout (3 changed
#: only the height's distribution: the same noise, thresholded at the reference's quantiles).
NOISE_STREAM = 2

#: nmmo 2.1.1's height (its blended noise before the material thresholds) at the quantiles 0, 1/40,
#: ..., 1 over the playable squares of 64 of its 128^2 maps, measured with its own generator by
#: `benchmarks/ref_map_fractions.py --maps 64 --height-quantiles 41` (mean 0.5015, sd 0.2650; flatter
#: than a Gaussian, 3-5 % clipped at each end). Our heights take this distribution, so the material
#: thresholds (DESIGN.md's 0.30 / 0.70 / 0.85, the reference's too) give its material fractions.
REFERENCE_HEIGHT_QUANTILES = (
    0.0, 0.0, 0.0598, 0.1063, 0.139, 0.1697, 0.1971, 0.2233, 0.2475, 0.272, 0.296, 0.3191, 0.3412, 0.3624,
    0.3832, 0.4039, 0.4245, 0.4446, 0.4649, 0.4847, 0.5016, 0.5209, 0.5407, 0.5607, 0.5807, 0.6012, 0.6215,
    0.642, 0.6631, 0.6848, 0.7077, 0.7308, 0.755, 0.7789, 0.8049, 0.8316, 0.8618, 0.8935, 0.9396, 1.0, 1.0,
)
#: The standard deviation of those heights: MAP_NOISE_SPREAD at this value reproduces them exactly.
REFERENCE_HEIGHT_STD = 0.265

#: The config keys that shape a map; a change in any of them changes the cache key.
MAP_KEYS = (
    "MAP_CENTER",
    "MAP_BORDER",
    "MAP_NOISE_OCTAVES_MAX",
    "MAP_NOISE_FREQ_MAX",
    "MAP_NOISE_FREQ_MIN",
    "MAP_NOISE_SPREAD",
    "MAP_WATER_THRESHOLD",
    "MAP_GRASS_THRESHOLD",
    "MAP_FOREST_THRESHOLD",
)



@dataclass(frozen=True)
class Map:
    """A generated map. `material` is a read-only S x S uint8 grid of `Material` values."""

    material: np.ndarray
    seed: int
    center: int
    border: int
    params: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def size(self) -> int:
        return self.material.shape[0]

    def spawn_tiles(self) -> np.ndarray:
        """The spawn band (the playable square's outer ring), clockwise from the top-left corner,
        as an (4 * (center - 1), 2) array of (row, col)."""
        return ring_tiles(self.border, self.border + self.center - 1)

    def fractions(self) -> dict[str, float]:
        """Fraction of the playable square covered by each material."""
        inside = slice(self.border, self.border + self.center)
        inner = self.material[inside, inside]
        counts = np.bincount(inner.ravel(), minlength=len(Material))
        return {m.name.lower(): float(counts[m]) / inner.size for m in Material}


def map_params(config: Config) -> dict:
    """The parameters that determine a map, for cache keys and headers."""
    return {key: getattr(config, key) for key in MAP_KEYS}


def _octave_frequencies(config: Config) -> np.ndarray:
    center = config.MAP_CENTER
    count = int(np.clip(center // 8, 1, config.MAP_NOISE_OCTAVES_MAX))
    high = config.MAP_NOISE_FREQ_MAX
    low = min(high, max(config.MAP_NOISE_FREQ_MIN, 2.0 / center))
    return np.geomspace(low, high, count)  # low to high; the last (finest) is the base octave


def _blended_noise(config: Config, rng: np.random.Generator) -> np.ndarray:
    """Noise over the playable square whose octave mixture varies in space.

    Near the centre a low-frequency mask chooses which octaves dominate (a Gaussian bump over octave
    index); toward the edge the finest (base) octave takes over, so the spawn band is dotted with
    small lakes and groves within a few steps of every spawn. Each map draws its own octave amplitudes and
    bump width, so a pool of maps looks diverse.
    """
    center = config.MAP_CENTER
    freqs = _octave_frequencies(config)
    count = len(freqs)
    amplitudes = rng.uniform(0.5, 1.5, size=count)
    width = rng.uniform(0.6, 1.6)

    mask = normalize(gradient_noise(center, center, freqs[0] / 2, rng)) * (count - 1)
    coords = (np.arange(center, dtype=np.float32) + 0.5) / center * 2.0 - 1.0
    edge = np.maximum(np.abs(coords)[:, None], np.abs(coords)[None, :]) ** 2  # 0 centre .. 1 edge

    total = np.zeros((center, center), dtype=np.float32)
    weight_sq = np.zeros((center, center), dtype=np.float32)
    for k, freq in enumerate(freqs):
        local = amplitudes[k] * np.exp(-0.5 * ((mask - k) / width) ** 2)
        weight = (1.0 - edge) * local + edge * (1.0 if k == count - 1 else 0.0)
        weight = weight.astype(np.float32) + np.float32(1e-3)
        total += weight * gradient_noise(center, center, float(freq), rng)
        weight_sq += weight * weight
    # Dividing by the weights' L2 norm keeps the variance the same wherever octaves mix, so material
    # fractions do not drift between the centre and the edge.
    return reference_heights(total / np.sqrt(weight_sq), config.MAP_NOISE_SPREAD)


def reference_heights(noise: np.ndarray, spread: float = REFERENCE_HEIGHT_STD) -> np.ndarray:
    """Map noise to heights in [0, 1] with nmmo 2.1.1's height distribution, keeping its order.

    Each tile's rank in the map picks its height from the reference's quantiles, so every map,
    32^2 to 1024^2, has the reference's distribution (and its material fractions) whatever the
    octave mixture; `spread` scales the deviation from 0.5 (REFERENCE_HEIGHT_STD: unscaled).
    """
    order = np.argsort(noise, axis=None, kind="stable")
    ranks = np.empty(noise.size, dtype=np.float64)
    ranks[order] = (np.arange(noise.size) + 0.5) / noise.size
    probabilities = np.linspace(0.0, 1.0, len(REFERENCE_HEIGHT_QUANTILES))
    height = np.interp(ranks, probabilities, REFERENCE_HEIGHT_QUANTILES).reshape(noise.shape)
    scale = spread / REFERENCE_HEIGHT_STD
    return np.clip(0.5 + scale * (height - 0.5), 0.0, 1.0).astype(np.float32)


def generate_map(config: Config, seed: int) -> Map:
    """Generate the map for `seed` (pure function of the map parameters and the seed; no cache)."""
    config.validate()
    seed = int(seed)
    if seed < 0:
        raise ConfigError(f"map seeds are non-negative integers, got {seed}")
    center, border = config.MAP_CENTER, config.MAP_BORDER
    rng = np.random.default_rng([NOISE_STREAM, seed])
    height = _blended_noise(config, rng)

    inner = np.full((center, center), Material.STONE, dtype=np.uint8)
    inner[height <= config.MAP_FOREST_THRESHOLD] = Material.FOREST
    inner[height <= config.MAP_GRASS_THRESHOLD] = Material.GRASS
    inner[height <= config.MAP_WATER_THRESHOLD] = Material.WATER

    # Spawn band: the outer ring is grass; the ring inside turns water and stone into forest.
    inner[[0, -1], :] = Material.GRASS
    inner[:, [0, -1]] = Material.GRASS
    second = inner[1:-1, 1:-1]
    ring2 = np.zeros(second.shape, dtype=bool)
    ring2[[0, -1], :] = ring2[:, [0, -1]] = True
    blocked = ring2 & ((second == Material.WATER) | (second == Material.STONE))
    second[blocked] = Material.FOREST
    _guarantee_food_and_water(inner)

    material = np.full((center + 2 * border,) * 2, Material.LAVA, dtype=np.uint8)
    material[border : border + center, border : border + center] = inner
    material.setflags(write=False)
    return Map(material=material, seed=seed, center=center, border=border, params=map_params(config))


def _guarantee_food_and_water(inner: np.ndarray) -> None:
    """Rings 0 and 1 are all walkable and connected; water on ring 2 or forest on ring 1 is then
    reachable from every spawn. If noise left none (rare, tiny maps), place some at side midpoints."""
    center = inner.shape[0]
    if center < 7:
        return
    mid = center // 2
    ring1 = np.concatenate([inner[1, 1:-1], inner[-2, 1:-1], inner[1:-1, 1], inner[1:-1, -2]])
    if not np.any(ring1 == Material.FOREST):
        inner[[1, -2, mid, mid], [mid, mid, 1, -2]] = Material.FOREST
    ring2 = np.concatenate([inner[2, 2:-2], inner[-3, 2:-2], inner[2:-2, 2], inner[2:-2, -3]])
    if not np.any(ring2 == Material.WATER):
        inner[[2, -3, mid, mid], [mid, mid, 2, -3]] = Material.WATER


# ---------------------------------------------------------------- pools
def map_seed(config: Config, index: int, split: str = "train") -> int:
    """Seed of map `index` in the training pool (seeds 0..MAP_N-1) or the held-out eval pool."""
    if split == "train":
        size, offset = config.MAP_N, 0
    elif split == "eval":
        size, offset = config.MAP_N_EVAL, config.MAP_EVAL_SEED_OFFSET
    else:
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    if not 0 <= index < size:
        raise ValueError(f"map index {index} is outside the {split} pool of {size} maps")
    return offset + int(index)


def map_pool(config: Config, split: str = "train") -> list[int]:
    """All seeds of a pool."""
    size = config.MAP_N if split == "train" else config.MAP_N_EVAL
    return [map_seed(config, i, split) for i in range(size)]


# ---------------------------------------------------------------- cache
def cache_dir(config: Config) -> Path:
    """Where maps are cached: PATH_MAPS, else $NMMO_CACHE_DIR/maps, else ~/.cache/nmmo/maps."""
    if config.PATH_MAPS:
        return Path(config.PATH_MAPS).expanduser()
    root = os.environ.get("NMMO_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "nmmo"
    return Path(root).expanduser() / "maps"


def cache_key(config: Config, seed: int) -> str:
    """Digest of (generator version, map parameters, seed): any change gives a new file name."""
    header = {"generator_version": GENERATOR_VERSION, "params": map_params(config), "seed": int(seed)}
    blob = json.dumps(header, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def save_map(game_map: Map, directory: Path, config: Config) -> Path:
    """Write `<key>.npy` then `<key>.json` (the header, written last, marks the entry complete)."""
    key = cache_key(config, game_map.seed)
    npy = directory / f"{key}.npy"
    atomic_write_bytes(npy, _npy_bytes(game_map.material))
    header = {
        "generator_version": GENERATOR_VERSION,
        "params": map_params(config),
        "seed": game_map.seed,
        "shape": list(game_map.material.shape),
        "sha256": hashlib.sha256(game_map.material.tobytes()).hexdigest(),
        "fractions": game_map.fractions(),
    }
    atomic_write_bytes(directory / f"{key}.json", (json.dumps(header, indent=1) + "\n").encode())
    return npy


def _load_cached(config: Config, seed: int, directory: Path) -> Map | None:
    key = cache_key(config, seed)
    npy, meta = directory / f"{key}.npy", directory / f"{key}.json"
    if not (npy.is_file() and meta.is_file()):
        return None
    try:
        header = json.loads(meta.read_text())
        material = np.load(npy, allow_pickle=False)
    except (OSError, ValueError):
        return None
    expected = {"generator_version": GENERATOR_VERSION, "params": map_params(config), "seed": int(seed)}
    if any(header.get(k) != v for k, v in expected.items()):
        return None
    if material.dtype != np.uint8 or list(material.shape) != [config.MAP_SIZE] * 2:
        return None
    if hashlib.sha256(material.tobytes()).hexdigest() != header.get("sha256"):
        return None  # corrupt: regenerate
    material.setflags(write=False)
    return Map(material, int(seed), config.MAP_CENTER, config.MAP_BORDER, map_params(config))


def get_map(config: Config, seed: int, cache: bool = True) -> Map:
    """The map for `seed`, from the disk cache when a valid entry exists, else generated (and
    cached). A stale, foreign or corrupt cache entry is never used."""
    if not cache:
        return generate_map(config, seed)
    directory = cache_dir(config)
    cached = _load_cached(config, seed, directory)
    if cached is not None:
        return cached
    game_map = generate_map(config, seed)
    if directory not in _CLEANED:  # once per directory and process: what killed writers left (an
        remove_stale_temps(directory, min_age=STALE_TEMP_AGE_S)  # episode pool's others write now)
        _CLEANED.add(directory)
    save_map(game_map, directory, config)
    return game_map


_CLEANED: set[Path] = set()
#: A map cache's temporary file this old is a dead writer's (writing a map takes milliseconds).
STALE_TEMP_AGE_S = 600.0


# ---------------------------------------------------------------- stats
def walkable(material: np.ndarray) -> np.ndarray:
    """Boolean grid: tiles an agent can stand on (grass, scrub, forest)."""
    return WALKABLE[material]


def bfs_distances(passable: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Walking distance (4-neighbour steps) from the nearest source to every passable tile; -1 where
    unreachable. Frontier-vectorized BFS: each ring of the search is one numpy step."""
    height, width = passable.shape
    flat_ok = np.zeros(height * width + 1, dtype=bool)  # sentinel slot at the end stays False
    flat_ok[:-1] = passable.ravel()
    dist = np.full(height * width, -1, dtype=np.int32)
    frontier = np.unique(sources[:, 0] * width + sources[:, 1])
    frontier = frontier[flat_ok[frontier]]
    dist[frontier] = 0
    step = 0
    while frontier.size:
        step += 1
        col = frontier % width
        candidates = []
        for delta, blocked_col in flat_neighbours(width):
            nxt = frontier + delta
            candidates.append(nxt[(nxt >= 0) & (nxt < height * width) & (col != blocked_col)])
        nxt = np.unique(np.concatenate(candidates))
        nxt = nxt[flat_ok[nxt] & (dist[nxt] < 0)]
        dist[nxt] = step
        frontier = nxt
    return dist.reshape(height, width)


def map_stats(game_map: Map) -> dict:
    """Material fractions, the walkable fraction reachable from the spawn band, and whether every
    spawn tile can walk to a forest and to a tile next to water."""
    passable = walkable(game_map.material)
    spawns = game_map.spawn_tiles()
    dist = bfs_distances(passable, spawns)
    reach = dist >= 0
    near_water = water_adjacent(game_map.material)
    return {
        "seed": game_map.seed,
        "size": game_map.size,
        "fractions": game_map.fractions(),
        "reachable_fraction": float(reach.sum() / max(1, passable.sum())),
        "spawns_reach_forest": bool(np.any(reach & (game_map.material == Material.FOREST))),
        "spawns_reach_water": bool(np.any(reach & near_water)),
    }


# ---------------------------------------------------------------- preview
def material_rgb(material: np.ndarray) -> np.ndarray:
    """H x W x 3 uint8 image, one colour per material."""
    palette = np.zeros((256, 3), dtype=np.uint8)
    for m, rgb in MATERIAL_COLORS.items():
        palette[m] = rgb
    return palette[material]


def preview_png(game_map: Map, path: Path, zoom: int = 0, downscale: int = 1) -> Path:
    """Write a PNG preview: one colour per material. `downscale` keeps every k-th tile; `zoom`
    repeats each tile z x z pixels (0 = choose so the image is at least 256 px wide)."""
    from nmmo.io.png import write_png

    image = material_rgb(game_map.material)[::downscale, ::downscale]
    if zoom <= 0:
        zoom = max(1, 256 // image.shape[0])
    if zoom > 1:
        image = image.repeat(zoom, axis=0).repeat(zoom, axis=1)
    write_png(path, image)
    return path
