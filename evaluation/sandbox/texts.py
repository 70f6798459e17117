"""Short texts of what a submission said or raised, bounded whatever it returned: what the worker
reports of an error (`error_text`) and what the host quotes of a reply or a log (`preview`). The
tournament's fault records (`evaluation.faults`) keep these texts."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any


def preview(value: Any, limit: int = 80) -> str:
    """Repr cut short: fault messages must stay small whatever a submission returns."""
    try:
        text = repr(value)
    except Exception as err:  # noqa: BLE001 - a hostile __repr__ must not break reporting
        text = f"<unprintable {type(value).__name__}: {type(err).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_text(err: BaseException) -> str:
    """Exception type, message and the innermost frame: enough to fix a submission, and short."""
    frames = traceback.extract_tb(err.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(err).__name__}: {preview(str(err), 200)}{where}"
