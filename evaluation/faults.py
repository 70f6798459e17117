"""What went wrong with a policy in a tournament: fault records.

Faults are counted per tick and per policy, by kind (`FAULT_KINDS`), with the first few distinct
messages kept; a fault message never grows with what a submission returned (the sandbox's
`evaluation.sandbox.texts.preview` bounds it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

FAULT_KINDS = ("exception", "timeout", "malformed")
MAX_MESSAGES = 5


@dataclass
class Faults:
    """What went wrong with one policy: ticks with a fault, by kind, and what it cost."""

    exception: int = 0
    timeout: int = 0
    malformed: int = 0
    dropped_actions: int = 0  # single-agent actions dropped as malformed (a tick may drop several)
    restarts: int = 0  # workers killed and started again
    disabled: int = 0  # episodes in which the policy stopped acting for good
    not_started: int = 0  # episodes in which it never acted at all (could not be built): not ranked
    answered: int = 0  # ticks whose reply was read and used, at least in part (0 and faults: `all_faults`)
    messages: list[str] = field(default_factory=list)  # the first few distinct fault messages

    def record(self, kind: str, message: str) -> None:
        """Count one fault of `kind` and keep its message if it is new."""
        setattr(self, kind, getattr(self, kind) + 1)
        text = f"{kind}: {message}"
        if len(self.messages) < MAX_MESSAGES and text not in self.messages:
            self.messages.append(text)

    @property
    def total(self) -> int:
        """Ticks with a fault of any kind."""
        return self.exception + self.timeout + self.malformed

    def merge(self, other: Faults) -> Faults:
        """Sum of two fault records (messages: the first few distinct of both)."""
        merged = Faults(**{k: getattr(self, k) + getattr(other, k) for k in
                           ("exception", "timeout", "malformed", "dropped_actions", "restarts", "disabled",
                            "not_started", "answered")})
        merged.messages = list(dict.fromkeys(self.messages + other.messages))[:MAX_MESSAGES]
        return merged

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Faults:
        return cls(**{k: (list(v) if k == "messages" else int(v)) for k, v in data.items()})

    def summary(self) -> str:
        """A short human-readable line: 'none' or e.g. 'timeout 2, malformed 1 (3 actions)'."""
        parts = [f"{kind} {getattr(self, kind)}" for kind in FAULT_KINDS if getattr(self, kind)]
        if self.dropped_actions:
            parts.append(f"{self.dropped_actions} actions dropped")
        if self.not_started:
            parts.append(f"never started in {self.not_started} episode(s)")
        if self.disabled > self.not_started:
            parts.append(f"disabled in {self.disabled - self.not_started} episode(s)")
        return ", ".join(parts) or "none"


def all_faults(record: Faults | Mapping[str, Any]) -> bool:
    """Whether a policy's record (one episode's or pooled) is all faults: it faulted or never
    started, and no reply of it was ever used. Its agents only stood idle, so no metric of the run
    measures it: the one rule every command applies to its results (`require_answers`)."""
    faults = record if isinstance(record, Faults) else Faults.from_dict(record)
    return faults.answered == 0 and (faults.total > 0 or faults.not_started > 0)


def require_answers(results: Mapping[str, Any]) -> None:
    """Refuse a result in which some policy is all faults (`all_faults`): a ValueError naming each
    such policy (by its display name) with its faults and the first fault message, so that a table
    of idle agents' numbers never passes for a measurement."""
    from nmmo.policy import display_names

    bad = [policy for policy in results["policies"] if all_faults(results["faults"][policy])]
    if not bad:
        return
    names = display_names(results["policies"])
    summaries = ", ".join(f"{names[p]} ({Faults.from_dict(results['faults'][p]).summary()})" for p in bad)
    first = next((message for p in bad for message in results["faults"][p]["messages"]), None)
    its, it = ("their", "them") if len(bad) > 1 else ("its", "it")
    raise ValueError(f"{summaries}: never acted (could not start, or every call failed), so {its} agents only "
                     f"stood idle and no metric measures {it}" + (f"; first fault: {first}" if first else ""))

