"""Checkpoint files: tensors and plain data in, tensors and plain data out, never code.

A checkpoint is a `torch.save` archive of a dict whose leaves are tensors, numbers, strings,
booleans and None, nested in dicts, lists and tuples. `save` checks that before writing (anything
else is converted, or refused with the key that held it), and `load` reads with
``torch.load(..., weights_only=True)``: PyTorch's restricted unpickler, which builds only those
types and refuses any other global a file names. Researchers share checkpoints, and a pickle that
names ``os.system`` would otherwise run it on load, so a file that needs more than plain data is
refused with an error naming the file and the object it asked for. Before torch reads it, the
file's zip members are sized (`nmmo.io.torchzip`): none may inflate past a cap.
"""

from __future__ import annotations

import io
import os
import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmmo.io import torchzip
from nmmo.io.files import atomic_write_bytes


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, or holds more than tensors and plain data."""


def plain(value: Any, where: str = "checkpoint") -> Any:
    """`value` with numpy scalars and arrays, paths and sets turned into tensors and plain Python
    data; raises CheckpointError naming the key (`where`) of anything else."""
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {_plain_key(k, where): plain(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, (set, frozenset)):
        return [plain(v, f"{where}[...]") for v in sorted(value, key=repr)]
    raise CheckpointError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}; checkpoints hold "
                          "only tensors, numbers, strings, lists and dicts")


def _plain_key(key: Any, where: str) -> Any:
    if isinstance(key, (str, int, bool)) or key is None:
        return key
    if isinstance(key, np.generic):
        return key.item()
    raise CheckpointError(f"{where} has a key of type {type(key).__name__} ({key!r}); use str or int keys")


def save(path: str | os.PathLike, data: dict) -> Path:
    """Write `data` (made plain, see `plain`) atomically to `path`; returns the path."""
    buffer = io.BytesIO()
    torch.save(plain(data), buffer)
    atomic_write_bytes(Path(path), buffer.getvalue())
    return Path(path)


def load(path: str | os.PathLike, device: str = "cpu") -> dict:
    """Read a checkpoint with PyTorch's weights-only unpickler (tensors and plain data only)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    try:
        data = torchzip.load(path, f"checkpoint {str(path)!r} cannot be read", map_location=device)
    except torchzip.ArchiveError as err:  # not a zip, or members past the caps: nothing was inflated
        raise CheckpointError(str(err)) from None
    except pickle.UnpicklingError as err:
        refused = _refused_global(err)
        if refused is None:  # not an object it refused: bytes it could not parse
            raise CheckpointError(f"checkpoint {str(path)!r} cannot be read: {_weights_error(err)}") from None
        raise CheckpointError(f"checkpoint {str(path)!r} holds more than tensors and plain data (it asks for "
                              f"{refused}); refused: loading it could run code. Checkpoints written by `nmmo train` "
                              "hold only tensors, numbers, strings, lists and dicts") from None
    except Exception as err:  # noqa: BLE001 - a truncated or foreign file: one clear error
        first = str(err).splitlines()[0] if str(err) else ""
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be read: {type(err).__name__}: {first}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"checkpoint {str(path)!r} holds a {type(data).__name__}, not a dict")
    return data


def _refused_global(err: Exception) -> str | None:
    """The object the restricted unpickler refused (e.g. 'posix.system'), from its message."""
    match = re.search(r"GLOBAL\s+([\w.]+)", str(err))
    return match.group(1) if match else None


def _weights_error(err: Exception) -> str:
    """The unpickler's own reason (after PyTorch's advice, which is to load without the guard)."""
    text = str(err)
    reason = text.split("WeightsUnpickler error:", 1)[1] if "WeightsUnpickler error:" in text else text
    first = next((line.strip() for line in reason.splitlines() if line.strip()), "")
    return first[:200] or type(err).__name__


#: What a shipped weights file keeps of a training checkpoint (no optimizer state, no RNG, no log).
WEIGHTS_KEYS = ("model", "model_kwargs", "step", "iteration", "args", "config_toml", "config_name")


def export_weights(checkpoint: dict, path: str | os.PathLike, **about: Any) -> Path:
    """Write the policy part of a training checkpoint to `path`: the weights (as float32 tensors),
    the model's size, the step count, the run's arguments and env config, plus `about` (e.g. the
    recipe). About a quarter of the checkpoint (Adam keeps two moments per weight), and it plays
    wherever the checkpoint does."""
    missing = [key for key in ("model", "model_kwargs") if key not in checkpoint]
    if missing:
        raise CheckpointError(f"cannot export weights: the checkpoint has no {', '.join(missing)}")
    weights = {key: checkpoint[key] for key in WEIGHTS_KEYS if key in checkpoint}
    weights["model"] = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in checkpoint["model"].items()}
    return save(path, {**weights, "about": about})
