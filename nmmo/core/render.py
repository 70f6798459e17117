"""The map as an RGB picture: what ``env.render()`` returns (``render_mode="rgb_array"``) and what
``nmmo replay export`` writes, frame by frame, so a GIF of a replay shows what the env showed.

`entities_rgb` paints a material map with players white and NPCs black, one pixel a tile;
`overlay_rgb` blends a quantized overlay over it as the 3D viewer does (the terrain turned grey,
the overlay through the viewer's colour map, `RAMP`); `upscale` repeats each tile k x k pixels.
"""

from __future__ import annotations

import numpy as np

from nmmo.core.state import State
from nmmo.core.world import material_rgb

PLAYER_RGB, NPC_RGB = (255, 255, 255), (0, 0, 0)
#: The viewer's heatmap colour map (client_server/web/src/colors.js RAMP: dark purple -> yellow,
#: viridis-like): (position, r, g, b) control points, interpolated linearly to 256 entries.
RAMP = ((0.0, 0x44, 0x01, 0x54), (0.125, 0x48, 0x28, 0x78), (0.25, 0x3E, 0x49, 0x89), (0.375, 0x31, 0x68, 0x8E),
        (0.5, 0x26, 0x82, 0x8E), (0.625, 0x1F, 0x9E, 0x89), (0.75, 0x35, 0xB7, 0x79), (0.875, 0x6E, 0xCE, 0x58),
        (1.0, 0xFD, 0xE7, 0x25))


def entities_rgb(material: np.ndarray, rows: np.ndarray, cols: np.ndarray, is_player: np.ndarray,
                 base: np.ndarray | None = None) -> np.ndarray:
    """H x W x 3 uint8: the map coloured by material (or `base`, a picture of it), each live entity
    at (`rows`, `cols`) a pixel, white for players (`is_player`) and black for NPCs."""
    image = (material_rgb(material) if base is None else base).copy()
    colours = np.where(np.asarray(is_player, dtype=bool)[:, None], PLAYER_RGB, NPC_RGB).astype(np.uint8)
    image[rows, cols] = colours
    return image


def state_rgb(state: State) -> np.ndarray:
    """`entities_rgb` of the state tables: the map by material, players white and NPCs black."""
    ent = state.entities
    alive = np.flatnonzero(ent.alive)
    return entities_rgb(state.tiles.material, ent.row[alive], ent.col[alive], alive < ent.n_players)


def colormap() -> np.ndarray:
    """256 x 3 uint8: `RAMP` interpolated (value 0 -> its first colour, 255 -> its last)."""
    points = np.array(RAMP, dtype=np.float64)
    t = np.arange(256) / 255
    return np.rint(np.stack([np.interp(t, points[:, 0], points[:, c]) for c in (1, 2, 3)], axis=1)).astype(np.uint8)


def overlay_rgb(material: np.ndarray, heat: np.ndarray, opacity: float = 0.75) -> np.ndarray:
    """The terrain with a quantized overlay (`heat`: 0..255 per tile) over it: the terrain's grey
    (its luma x 0.85, so the colour map reads unambiguously) mixed with the colour map by `opacity`."""
    terrain = material_rgb(material).astype(np.float64)
    grey = (terrain @ np.array([0.299, 0.587, 0.114]) * 0.85)[:, :, None]
    heat_rgb = colormap()[np.asarray(heat, dtype=np.uint8)].astype(np.float64)
    return np.rint(grey * (1 - opacity) + heat_rgb * opacity).astype(np.uint8)


def upscale(image: np.ndarray, scale: int) -> np.ndarray:
    """Each pixel repeated `scale` x `scale` times (a tile stays a sharp square)."""
    return image if scale == 1 else image.repeat(scale, axis=0).repeat(scale, axis=1)
