"""Integer enums shared by the engine and its clients, so nobody indexes by magic numbers."""

from __future__ import annotations

from enum import IntEnum


class Material(IntEnum):
    """Tile materials (the values stored in `Map.material`)."""

    LAVA = 0
    WATER = 1
    GRASS = 2
    SCRUB = 3
    FOREST = 4
    STONE = 5


#: RGB colour per material, for previews and the viewer.
MATERIAL_COLORS: dict[Material, tuple[int, int, int]] = {
    Material.LAVA: (207, 16, 32),
    Material.WATER: (44, 110, 196),
    Material.GRASS: (122, 178, 74),
    Material.SCRUB: (176, 160, 96),
    Material.FOREST: (30, 96, 44),
    Material.STONE: (128, 128, 128),
}
