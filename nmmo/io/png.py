"""A minimal PNG writer (RGB, 8 bit) on zlib, so previews need no imaging library."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bytes(image: np.ndarray) -> bytes:
    """Encode an H x W x 3 uint8 array as PNG."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an H x W x 3 uint8 image, got {image.dtype} {image.shape}")
    height, width, _ = image.shape
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), image.reshape(height, -1)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def write_png(path: str | Path, image: np.ndarray) -> Path:
    """Write `image` to `path` atomically."""
    from nmmo.io.files import atomic_write_bytes

    path = Path(path)
    atomic_write_bytes(path, png_bytes(image))
    return path
