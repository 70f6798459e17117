"""What the experiments' reports share: the tables' interval cells and the figures' helpers
(pyplot without a display, an agent-steps axis, PNGs written atomically)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from nmmo.io.files import atomic_write_bytes


def fmt(cell: dict | None, digits: int = 1) -> str:
    """'mean [low, high]' of a statistic ('-' where missing)."""
    if not cell or cell.get("mean") is None:
        return "-"
    if cell.get("low") is None:
        return f"{cell['mean']:.{digits}f}"
    return f"{cell['mean']:.{digits}f} [{cell['low']:.{digits}f}, {cell['high']:.{digits}f}]"


def save_figure(fig: Any, path: Path) -> Path:
    """A matplotlib figure as PNG, written atomically, then closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return atomic_write_bytes(path, buffer.getvalue())


def label_agent_steps(ax: Any) -> None:
    """An x axis of agent-steps, ticks written short (250k, 1.5M) so that they never run together."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    def short(x: float, _pos: int) -> str:
        if abs(x) >= 1e6:
            return f"{x / 1e6:g}M"
        return f"{x / 1e3:g}k" if abs(x) >= 1e3 else f"{x:g}"

    ax.set_xlabel("agent-steps")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(FuncFormatter(short))


def pyplot() -> Any:
    """Pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
