import json
from collections import deque

import numpy as np
import pytest

from nmmo import config
from nmmo.core import world
from nmmo.core.enums import Material


def _walk_from(material: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Plain per-tile BFS (the obviously-correct reference for the vectorized one)."""
    ok = world.walkable(material)
    seen = np.zeros_like(ok)
    seen[start] = True
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < ok.shape[0] and 0 <= nc < ok.shape[1] and ok[nr, nc] and not seen[nr, nc]:
                seen[nr, nc] = True
                queue.append((nr, nc))
    return seen


def test_same_seed_same_bytes_different_seed_differs():
    conf = config.Small()
    a, b, c = world.generate_map(conf, 3), world.generate_map(conf, 3), world.generate_map(conf, 4)
    assert a.material.tobytes() == b.material.tobytes()
    assert a.material.tobytes() != c.material.tobytes()
    assert a.material.dtype == np.uint8 and a.material.shape == (64, 64)
    assert not a.material.flags.writeable


def test_border_is_lava_and_spawn_band_is_grass():
    conf = config.Medium()
    game_map = world.generate_map(conf, 0)
    m, b, c = game_map.material, conf.MAP_BORDER, conf.MAP_CENTER
    assert (m[:b] == Material.LAVA).all() and (m[b + c :] == Material.LAVA).all()
    assert (m[:, :b] == Material.LAVA).all() and (m[:, b + c :] == Material.LAVA).all()
    spawns = game_map.spawn_tiles()
    assert len(spawns) == 4 * (c - 1) == len({tuple(t) for t in spawns})
    assert (m[spawns[:, 0], spawns[:, 1]] == Material.GRASS).all()
    inner = m[b + 1 : b + c - 1, b + 1 : b + c - 1]
    ring = np.concatenate([inner[0], inner[-1], inner[:, 0], inner[:, -1]])
    assert not np.isin(ring, [Material.WATER, Material.STONE]).any()


# Bounds on the playable square's material fractions for default maps, over seeds and sizes.
FRACTION_BOUNDS = {"water": (0.10, 0.35), "grass": (0.40, 0.70), "forest": (0.07, 0.25), "stone": (0.0, 0.15)}

# nmmo 2.1.1's own generator on its first 8 maps of 128^2, materials folded into ours (printed by
# `benchmarks/ref_map_fractions.py --maps 8`, run with the reference interpreter).
REFERENCE_FRACTIONS = {"water": 0.2418, "grass": 0.4951, "forest": 0.1584, "stone": 0.1046}


def test_default_maps_have_the_reference_generators_material_fractions():
    conf = config.load("small_maps")
    maps = [world.generate_map(conf, seed) for seed in world.map_pool(conf, "eval")[:8]]
    for name, expected in REFERENCE_FRACTIONS.items():
        ours = np.mean([game_map.fractions()[name] for game_map in maps])
        assert abs(ours - expected) < 0.015, (name, ours, expected)


def test_heights_follow_the_reference_quantiles_in_order():
    noise = np.random.default_rng(0).normal(size=(64, 64))
    heights = world.reference_heights(noise)
    assert (np.diff(heights.ravel()[np.argsort(noise, axis=None)]) >= 0).all()  # higher noise, no lower height
    probabilities = np.linspace(0.0, 1.0, len(world.REFERENCE_HEIGHT_QUANTILES))
    for threshold in (0.30, 0.70, 0.85):
        reference_share = np.interp(threshold, world.REFERENCE_HEIGHT_QUANTILES, probabilities)
        assert abs((heights <= threshold).mean() - reference_share) < 1 / 400
    wider = world.reference_heights(noise, spread=2 * world.REFERENCE_HEIGHT_STD)
    assert (wider <= 0.30).mean() > (heights <= 0.30).mean() and (wider > 0.85).mean() > (heights > 0.85).mean()


@pytest.mark.parametrize("preset", [config.Small, config.Medium])
def test_material_fractions_within_bounds_and_spawns_reach_food_and_water(preset):
    conf = preset()
    for seed in range(12):
        game_map = world.generate_map(conf, seed)
        fractions = game_map.fractions()
        for name, (low, high) in FRACTION_BOUNDS.items():
            assert low <= fractions[name] <= high, (seed, name, fractions[name])
        stats = world.map_stats(game_map)
        assert stats["spawns_reach_forest"] and stats["spawns_reach_water"]
        # every spawn tile, checked with the slow reference BFS from one of them (the band is connected)
        reach = _walk_from(game_map.material, tuple(game_map.spawn_tiles()[0]))
        spawns = game_map.spawn_tiles()
        assert reach[spawns[:, 0], spawns[:, 1]].all()
        assert (reach & (game_map.material == Material.FOREST)).any()
        assert (reach & world.water_adjacent(game_map.material)).any()


def test_vectorized_bfs_matches_reference():
    game_map = world.generate_map(config.Small(), 7)
    start = tuple(game_map.spawn_tiles()[5])
    dist = world.bfs_distances(world.walkable(game_map.material), np.array([start]))
    assert np.array_equal(dist >= 0, _walk_from(game_map.material, start))
    assert dist[start] == 0


def test_pools_are_disjoint():
    conf = config.Small().set("MAP_N", 8).set("MAP_N_EVAL", 4).set("MAP_EVAL_SEED_OFFSET", 100)
    train, held_out = world.map_pool(conf, "train"), world.map_pool(conf, "eval")
    assert train == list(range(8)) and held_out == [100, 101, 102, 103]
    with pytest.raises(ValueError, match="outside the eval pool of 4 maps"):
        world.map_seed(conf, 4, "eval")


def test_cache_reuses_valid_entries_and_never_stale_ones(tmp_path):
    conf = config.Small().set("PATH_MAPS", str(tmp_path))
    first = world.get_map(conf, 1)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and {p.split(".")[1] for p in files} == {"npy", "json"}
    header = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert header["generator_version"] == world.GENERATOR_VERSION and header["seed"] == 1
    assert header["params"]["MAP_CENTER"] == 32
    assert world.get_map(conf, 1).material.tobytes() == first.material.tobytes()

    changed = config.Small().set("PATH_MAPS", str(tmp_path)).set("MAP_WATER_THRESHOLD", 0.2)
    other = world.get_map(changed, 1)
    assert other.material.tobytes() != first.material.tobytes()
    assert len(list(tmp_path.glob("*.npy"))) == 2  # a new entry, not the stale one

    # a corrupt entry is detected and regenerated, never returned
    npy = tmp_path / f"{world.cache_key(conf, 1)}.npy"
    data = bytearray(npy.read_bytes())
    data[-1] ^= 0xFF
    npy.write_bytes(bytes(data))
    assert world.get_map(conf, 1).material.tobytes() == first.material.tobytes()


def test_no_temp_files_left_behind(tmp_path):
    conf = config.Small().set("PATH_MAPS", str(tmp_path))
    for seed in range(3):
        world.get_map(conf, seed)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cache_spares_the_temp_files_of_writers_still_at_work(tmp_path):
    """Episode processes share the map cache: one that cleans up a dead writer's temporary file must
    not delete another's write in progress (its os.replace would fail)."""
    import os
    import time

    conf = config.Small().set("PATH_MAPS", str(tmp_path))
    young, old = tmp_path / ".a.npy.x1.tmp", tmp_path / ".b.npy.x2.tmp"
    young.write_bytes(b"being written")
    old.write_bytes(b"left by a killed writer")
    past = time.time() - world.STALE_TEMP_AGE_S - 1
    os.utime(old, (past, past))
    world._CLEANED.discard(tmp_path)
    world.get_map(conf, 0)
    assert young.exists() and not old.exists()


def test_bad_seed_and_bad_config_are_clear_errors():
    with pytest.raises(ValueError, match="non-negative"):
        world.generate_map(config.Small(), -1)
    with pytest.raises(ValueError, match="vision window"):
        world.generate_map(config.Small().set("MAP_CENTER", 8), 0)


def test_preview_png_is_a_valid_image(tmp_path):
    import struct
    import zlib

    path = world.preview_png(world.generate_map(config.Small(), 0), tmp_path / "m.png", zoom=2)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (128, 128)
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    pixels = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(128, 1 + 128 * 3)
    assert (pixels[0, 1:4] == (207, 16, 32)).all()  # top-left corner is lava-red
