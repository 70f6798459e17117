"""The parser every `nmmo` command is built by (`Parser`): no abbreviated flags, and unknown flags
answered with the flags they resemble."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """The parser of every command: flags are never abbreviated (argparse would read ``--minute 1``
    as ``--minutes 1`` and ``--polic`` as ``--policy``, so a typo ran as some other flag). Sub-commands,
    plugged-in ones included, are built by their parent's class, so the one setting holds for all;
    an unknown flag is refused with the flags it resembles."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        self._words = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        hints = {**getattr(namespace, "_flag_hints", {}), **self._hints(extras)}
        if hints:  # a sub-command's namespace is copied into its parent's: the hints travel up to the
            namespace._flag_hints = hints  # parser that reports the unknown flags
        return namespace, extras

    def _hints(self, words: list[str]) -> dict[str, list[str]]:
        """{unknown flag: this parser's flags it resembles} for the words that are unknown flags."""
        flags = (w.split("=", 1)[0] for w in words if w.startswith("--"))
        close = {f: difflib.get_close_matches(f, list(self._option_string_actions), n=2, cutoff=0.75) for f in flags
                 if f not in self._option_string_actions}
        return {flag: found for flag, found in close.items() if found}

    def error(self, message: str) -> NoReturn:
        hints = self._hints(getattr(self, "_words", [])) if message.startswith("the following arguments") else {}
        said = "; ".join(f"{flag}: did you mean {' or '.join(close)}?" for flag, close in hints.items())
        super().error(message + (f" (flags are never abbreviated; {said})" if said else ""))

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:
        namespace, extras = self.parse_known_args(args, namespace)
        hints = vars(namespace).pop("_flag_hints", {})
        if extras:
            said = "; ".join(f"{flag}: did you mean {' or '.join(close)}?" for flag, close in hints.items())
            self.error(f"unrecognized arguments: {' '.join(extras)}"
                       + (f" (flags are never abbreviated; {said})" if said else ""))
        return namespace
