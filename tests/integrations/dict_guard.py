"""A guard for the native envs' tests: the per-agent dict translations raise if anything calls them."""

from __future__ import annotations

import pytest

import nmmo.core.actions
import nmmo.core.layout
import nmmo.envs.env


def forbid_dict_translations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `to_dicts` and `parse_actions` (where they are defined and where the env imported them)
    raise: a native env must never reach them; the PettingZoo trainer form always does."""

    def refuse(*args, **kwargs):
        raise AssertionError("a per-agent dict translation ran")

    for module, name in ((nmmo.envs.env, "to_dicts"), (nmmo.envs.env, "parse_actions"),
                         (nmmo.core.layout, "to_dicts"), (nmmo.core.actions, "parse_actions")):
        monkeypatch.setattr(module, name, refuse)
