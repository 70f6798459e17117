"""Vectorized 2D gradient (Perlin) noise in pure numpy.

Neural MMO used the `vec-noise` C extension, which does not build against numpy 2. Gradient noise
is a few array operations per octave, so numpy does it fast enough (a 1024^2 octave in tens of ms).
"""

from __future__ import annotations

import numpy as np


def _fade(t: np.ndarray) -> np.ndarray:
    """Perlin's quintic smoothstep 6t^5 - 15t^4 + 10t^3 (zero first and second derivatives at 0, 1)."""
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


def gradient_noise(height: int, width: int, frequency: float, rng: np.random.Generator) -> np.ndarray:
    """One octave of 2D gradient noise on a height x width grid, float32 in about [-0.71, 0.71].

    `frequency` is in lattice cells per tile (1/8 => features about 8 tiles wide). The lattice has a
    random unit gradient per node and a random sub-cell offset, both drawn from `rng`.
    """
    ys = np.arange(height, dtype=np.float64) * frequency + rng.uniform(0.0, 1.0)
    xs = np.arange(width, dtype=np.float64) * frequency + rng.uniform(0.0, 1.0)
    y0 = np.floor(ys).astype(np.int64)
    x0 = np.floor(xs).astype(np.int64)
    fy = (ys - y0).astype(np.float32)
    fx = (xs - x0).astype(np.float32)

    angles = rng.uniform(0.0, 2.0 * np.pi, size=(int(y0[-1]) + 2, int(x0[-1]) + 2))
    gy = np.sin(angles).astype(np.float32)
    gx = np.cos(angles).astype(np.float32)

    # Dot product of each corner's gradient with the offset from that corner, for all tiles at once.
    rows0, rows1 = y0[:, None], y0[:, None] + 1
    cols0, cols1 = x0[None, :], x0[None, :] + 1
    dy0, dy1 = fy[:, None], fy[:, None] - 1.0
    dx0, dx1 = fx[None, :], fx[None, :] - 1.0
    n00 = gy[rows0, cols0] * dy0 + gx[rows0, cols0] * dx0
    n01 = gy[rows0, cols1] * dy0 + gx[rows0, cols1] * dx1
    n10 = gy[rows1, cols0] * dy1 + gx[rows1, cols0] * dx0
    n11 = gy[rows1, cols1] * dy1 + gx[rows1, cols1] * dx1

    uy = _fade(fy)[:, None]
    ux = _fade(fx)[None, :]
    top = n00 + ux * (n01 - n00)
    bottom = n10 + ux * (n11 - n10)
    return top + uy * (bottom - top)


def normalize(values: np.ndarray) -> np.ndarray:
    """Rescale to [0, 1] (a constant array maps to 0.5)."""
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.full_like(values, 0.5)
    return (values - low) / (high - low)
