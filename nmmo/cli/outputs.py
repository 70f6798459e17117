"""One rule for every command's output folder: a folder that already holds files is never written
over silently.

A command that writes into ``--out DIR`` (train, eval, tournament, demo, the experiments) starts
only when DIR is missing or empty, or when the user said what to do with what is there:
``--resume`` continues the run it holds (commands that can), ``--force`` starts over in it (the
new run's files replace the old ones of the same names; nothing else is deleted). Anything else is
an error that names the folder, a few of its files and the three ways on, before any work starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

#: Files named in the refusal (the rest are counted).
SHOWN = 3


def add_out_flags(parser: argparse.ArgumentParser, default: Path, help: str,  # noqa: A002
                  resume: str | None = None) -> None:
    """``--out DIR`` (`help` says what goes there), ``--force`` and, when the command can continue
    a run (`resume`: that flag's help), ``--resume``; `check_output` applies the rule to them."""
    parser.add_argument("--out", type=Path, default=default, metavar="DIR", help=help)
    if resume is not None:
        parser.add_argument("--resume", action="store_true", help=resume)
    parser.add_argument("--force", action="store_true",
                        help="start over in a --out folder that already holds files (files of the same names "
                             "are replaced)" + ("" if resume is not None else "; without it such a folder is refused"))
    parser.set_defaults(claim_output=lambda args: claim_output(args.out, args.force, getattr(args, "resume", None)))


def claim_output(out: str | Path, force: bool, resume: bool | None) -> None:
    """Apply the rule to `out`: fine when it is missing or empty, or with `force` or `resume`
    (None: the command cannot resume); else a ValueError saying what it holds and how to go on."""
    out = Path(out)
    if force and resume:
        raise ValueError("--force starts over and --resume continues: give one of them")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if not held or force or resume:
        return
    names = ", ".join(held[:SHOWN]) + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else "")
    ways = "--resume continues its run, " if resume is not None else ""
    raise ValueError(f"{out} already holds files ({names}): {ways}--force starts over in it (files of the same "
                     "names are replaced), or choose another --out DIR")


def check_output(args: argparse.Namespace) -> None:
    """Run the command's output rule (``claim_output`` in its defaults), when it has one."""
    claim: Callable[[argparse.Namespace], None] | None = getattr(args, "claim_output", None)
    if claim is not None:
        claim(args)
