"""Reading an agent's action: one validator for the env and for the tournament's submission sandbox.

An action is ``{"Move": {"Direction": d}, "Attack": {"Style": s, "Target": t}}``, either part
optional (missing or None). Indices are ints, numpy integers or 0-d integer arrays that fit int64
(not bools, not floats). `parse_action` turns one into three ints or raises `ActionError` naming
the agent and the key, and `parse_actions` reads a whole step's dict of them; whether an index is
in range or allowed by the masks is the env's business (it drops such sub-actions and says why in
the infos, `apply_indices`), not a malformed action.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from nmmo.config import Config
from nmmo.core.enums import Direction
from nmmo.core.obs import Observations
from nmmo.core.state import State
from nmmo.core.systems import combat

MOVE, ATTACK, DIRECTION, STYLE, TARGET = "Move", "Attack", "Direction", "Style", "Target"
#: Keys of each part of an action.
PARTS = {MOVE: (DIRECTION,), ATTACK: (STYLE, TARGET)}
NO_ATTACK = -1
STAY = int(Direction.STAY)
_INT64 = (-(2**63), 2**63 - 1)


class ActionError(ValueError):
    """An action that cannot be read (wrong type, unknown or missing key, non-integer index); the
    message names the agent and the key."""


def parse_action(agent: Any, action: Any) -> tuple[int, int, int]:
    """(direction, style, target) of one agent's action; STAY and -1, -1 for the parts it leaves
    out. Raises `ActionError` for a malformed action. Ints too large for int64 pass here (the env's
    int64 arrays refuse them on assignment, see `int64_error`) so the common case stays cheap."""
    if type(action) is not dict:  # the common case first; any other mapping is read the same way
        if not isinstance(action, Mapping):
            raise ActionError(f"agent {agent}: action must be a dict like {{'Move': {{'Direction': 0}}}}, "
                              f"got {type(action).__name__}")
        action = dict(action)
    move, attack = action.get(MOVE), action.get(ATTACK)
    if len(action) != (MOVE in action) + (ATTACK in action):
        unknown = sorted(map(str, set(action) - {MOVE, ATTACK}))
        raise ActionError(f"agent {agent}: unknown action key {unknown[0]!r}; expected 'Move' and/or 'Attack'")
    direction, style, target = STAY, NO_ATTACK, NO_ATTACK
    if move is not None:
        d = move.get(DIRECTION) if type(move) is dict and len(move) == 1 else None
        direction = d if type(d) is int else _index(agent, move, MOVE, DIRECTION)
    if attack is not None:
        if type(attack) is dict and len(attack) == 2 and type(attack.get(STYLE)) is int and (
                type(attack.get(TARGET)) is int):
            style, target = attack[STYLE], attack[TARGET]
        else:
            style, target = _index(agent, attack, ATTACK, STYLE), _index(agent, attack, ATTACK, TARGET)
    return direction, style, target


def parse_actions(actions: Any, id_to_slot: dict[int, int], next_player_id: int) -> tuple[np.ndarray, list, np.ndarray]:
    """(slots, agent ids, (n, 3) int64 indices) of a dict API step's actions, each read by
    `parse_action`; actions of agents that already died are skipped. `id_to_slot` maps the live
    agents to their slots; ids from 1 to `next_player_id` - 1 have been issued. Raises
    `ActionError` for a malformed action, a key that is not an issued id, or an index that does
    not fit int64, so a bad step fails before the world changes."""
    if not isinstance(actions, dict):
        raise ActionError(f"actions must be a dict {{agent_id: action}}, got {type(actions).__name__}")
    slots = [id_to_slot.get(agent) for agent in actions]
    if None not in slots:  # every key a live agent: comprehensions, the common case
        agent_ids = list(actions)
        plain = _parse_plain(actions.values())
        if plain is not None:
            try:
                indices = np.fromiter(plain, dtype=np.int64, count=len(plain)).reshape(-1, 3)
                return np.array(slots, dtype=np.int64), agent_ids, indices
            except OverflowError:  # an index too large for int64: the full read below names its agent
                pass
        parsed = [parse_action(agent, action) for agent, action in actions.items()]
    else:
        slots, agent_ids, parsed = [], [], []
        for agent, action in actions.items():
            slot = id_to_slot.get(agent)
            if slot is None:
                _check_issued(agent, next_player_id)
                continue  # already dead: ignored
            slots.append(slot)
            agent_ids.append(agent)
            parsed.append(parse_action(agent, action))
    try:
        indices = np.array(parsed, dtype=np.int64).reshape(-1, 3)
    except OverflowError:
        agent = next(a for a, p in zip(agent_ids, parsed, strict=True)
                     if not all(_INT64[0] <= v <= _INT64[1] for v in p))
        raise int64_error(agent, actions[agent]) from None
    return np.array(slots, dtype=np.int64), agent_ids, indices


def _parse_plain(actions: Any) -> list[int] | None:
    """`parse_action` of each action inlined, for the plain form only (dicts of dicts of ints, no
    None part), as one flat list (direction, style, target, direction, ...); None as soon as one
    action is anything else (then `parse_action` reads them all and names the agent of a malformed
    one). What it accepts, it reads exactly as `parse_action` does, in about two thirds of the time
    with the conversion to an array (a flat list converts ~3x faster than a list of tuples)."""
    parsed: list[int] = []
    extend = parsed.extend
    for action in actions:
        if type(action) is not dict:
            return None
        move, attack = action.get(MOVE), action.get(ATTACK)
        if len(action) != (move is not None) + (attack is not None):  # an unknown key or a None part
            return None
        direction = STAY
        if move is not None:
            direction = move.get(DIRECTION) if type(move) is dict and len(move) == 1 else None
            if type(direction) is not int:
                return None
        if attack is None:
            extend((direction, NO_ATTACK, NO_ATTACK))
            continue
        if type(attack) is not dict or len(attack) != 2:
            return None
        style, target = attack.get(STYLE), attack.get(TARGET)
        if type(style) is not int or type(target) is not int:
            return None
        extend((direction, style, target))
    return parsed


def _check_issued(agent: Any, next_player_id: int) -> None:
    """An action keyed by a dead agent's id is ignored; any other key not a live agent's raises."""
    if not isinstance(agent, (int, np.integer)) or isinstance(agent, bool):
        raise ActionError(f"action keys are agent ids (int), got {agent!r}")
    if not 1 <= agent < next_player_id:
        raise ActionError(f"action for unknown agent {agent}: ids issued so far are 1..{next_player_id - 1}; "
                          "live agents are env.agents")


def int64_error(agent: Any, action: Any) -> ActionError:
    """The error for an action whose index does not fit the engine's int64 arrays."""
    return ActionError(f"agent {agent}: action {action!r} has an index too large for int64")


def _index(agent: Any, part: Any, key: str, sub: str) -> int:
    """One integer sub-action, or ActionError naming the agent and key."""
    if not isinstance(part, Mapping):
        raise ActionError(f"agent {agent}: action[{key!r}] must be a dict like {{{sub!r}: 0}}, got {part!r}")
    if sub not in part:
        raise ActionError(f"agent {agent}: action[{key!r}] is missing {sub!r}")
    extra = set(part) - set(PARTS[key])
    if extra:
        raise ActionError(f"agent {agent}: action[{key!r}] has unknown keys {sorted(map(str, extra))}")
    item = part[sub]
    value = int_index(item)
    if value is None:
        if isinstance(item, int) and not isinstance(item, bool):
            raise ActionError(f"agent {agent}: action[{key!r}][{sub!r}] = {item} is too large for int64")
        raise ActionError(f"agent {agent}: action[{key!r}][{sub!r}] must be an integer, got {item!r} "
                          f"({type(item).__name__})")
    return value


def int_index(value: Any) -> int | None:
    """A plain int from an int (IntEnum members included), numpy integer or 0-d integer array that
    fits int64; None for anything else (bools, floats, strings, arrays of several values, huge ints)."""
    if type(value) is not int:
        if isinstance(value, bool):
            return None
        if isinstance(value, int):  # an IntEnum member: nmmo.Direction.STAY, nmmo.Style.MELEE
            value = int(value)
        elif isinstance(value, np.ndarray):
            if value.ndim != 0 or not np.issubdtype(value.dtype, np.integer):
                return None
            value = value.item()
        elif isinstance(value, np.integer):
            value = int(value)
        else:
            return None
    return value if _INT64[0] <= value <= _INT64[1] else None


def clean_action(agent: Any, action: Any) -> dict[str, dict[str, int]]:
    """A fresh copy of one action with plain ints, only the parts it gave (ActionError if malformed):
    what crosses from a submission's process to the env."""
    direction, style, target = parse_action(agent, action)
    if not all(_INT64[0] <= v <= _INT64[1] for v in (direction, style, target)):
        raise int64_error(agent, action)
    out: dict[str, dict[str, int]] = {}
    if action.get(MOVE) is not None:
        out[MOVE] = {DIRECTION: direction}
    if action.get(ATTACK) is not None:
        out[ATTACK] = {STYLE: style, TARGET: target}
    return out


def no_actions(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-entity-row (directions, styles, targets) arrays of a tick where nobody acts: stay, no attack."""
    return (np.full(capacity, STAY, dtype=np.int64), np.full(capacity, -1, dtype=np.int64),
            np.full(capacity, -1, dtype=np.int64))


def apply_indices(obs: Observations, state: State, config: Config, slots: np.ndarray, indices: np.ndarray,
              out: tuple[np.ndarray, np.ndarray, np.ndarray], agent_ids: list | None = None) -> dict:
    """Check each slot's (direction, style, target index) row of `indices` against the ranges and
    the masks of its last observation `obs`, and write the valid ones into `out`, the per-entity-
    row (directions, styles, targets) arrays the realm ticks with (a target index becomes the row
    of the entity it names). Returns {agent: problems} for what was dropped (`agent_ids`: the agent
    of each slot, to name them; None: report nothing, as the batched API does)."""
    move, style, target = indices[:, 0], indices[:, 1], indices[:, 2]
    directions, styles, targets = out
    o, n_obs = obs, config.PLAYER_N_OBS
    move_ok = (move >= 0) & (move <= 4)
    move_ok[move_ok] = o.move_mask[slots[move_ok], move[move_ok]] == 1
    wants_attack = (target >= 0) & (target < n_obs) & (style != -1)
    attack_ok = wants_attack & (style >= 0) & (style <= 2)
    attack_ok[attack_ok] = (o.target_mask[slots[attack_ok], target[attack_ok]] == 1) & (
        o.style_mask[slots[attack_ok], style[attack_ok]] == 1)
    rows = np.where(attack_ok, o.entity_rows[slots, np.clip(target, 0, n_obs - 1)], -1)
    out_of_reach = np.zeros_like(attack_ok)
    aiming = attack_ok & (rows >= 0)
    if aiming.any():  # the masks allow any style with some target in reach, not this pair
        out_of_reach[aiming] = ~combat.valid_attacks(state, config, slots[aiming], style[aiming], rows[aiming])
        attack_ok &= ~out_of_reach
        rows = np.where(attack_ok, rows, -1)
    directions[slots] = np.where(move_ok, move, STAY)
    styles[slots] = np.where(attack_ok & (rows >= 0), style, -1)
    targets[slots] = np.where(attack_ok, rows, -1)
    bad_move = ~move_ok
    bad_attack = ~attack_ok & ((style != -1) | (target != -1)) & ~((target == n_obs) & (style >= 0) & (style <= 2))
    if agent_ids is None or not (bad_move.any() or bad_attack.any()):
        return {}
    problems: dict[int, dict] = {}
    for i in np.flatnonzero(bad_move | bad_attack).tolist():
        info = problems.setdefault(agent_ids[i], {})
        notes = []
        if bad_move[i]:
            notes.append(f"Move.Direction={move[i]} is out of range or masked (blocked tile or frozen)")
        if out_of_reach[i]:  # both heads allowed it, the pair does not: not a mask violation
            info["attack_out_of_reach"] = (f"Attack Style={style[i]} Target={target[i]}: that target is "
                                           "beyond the style's reach; no attack this tick")
        elif bad_attack[i]:
            notes.append(f"Attack Style={style[i]} Target={target[i]} is out of range or masked "
                         "(no valid target in that row within the style's reach)")
        if notes:
            info["invalid_actions"] = notes
    return problems


# ------------------------------------------------------------------- rows
#: The row standing for an action that could not be read (direction -1 is outside the action
#: space), so that whoever checks the rows counts it as invalid.
UNREADABLE_ROW = (-1, NO_ATTACK, NO_ATTACK)
#: The id standing for an action key that is not an agent id (no agent ever has id 0).
UNREADABLE_ID = 0
#: The row of an agent that stays and does not attack.
NO_OP_ROW = (STAY, NO_ATTACK, NO_ATTACK)


def array_reply_rows(rows: Any, n: int) -> tuple[np.ndarray, str | None]:
    """An array-form reply (`nmmo.policy.act_rows`) as int64 rows (n, 3), and the problem when it
    is not an integer array of that shape (then every row is `UNREADABLE_ROW`, so whoever checks
    the rows counts each agent's action as invalid)."""
    try:
        array = np.asarray(rows)
    except Exception as err:  # noqa: BLE001 - whatever a policy returned
        array, problem = None, f"act_arrays returned something that is not an array ({type(err).__name__})"
    else:
        problem = None if array.shape == (n, 3) and (np.issubdtype(array.dtype, np.integer) or array.size == 0) else (
            f"act_arrays returned a {array.dtype} array of shape {array.shape}, not ({n}, 3) ints")
    if problem is not None:
        return np.tile(np.array(UNREADABLE_ROW, dtype=np.int64), (n, 1)), problem
    return array.astype(np.int64, copy=False), None


def action_rows(actions: Any) -> tuple[np.ndarray, np.ndarray, str | None]:
    """A dict reply ``{agent: action}`` as arrays: agent ids (n,) and (direction, style, target)
    rows (n, 3), both int64, and the first problem met (None: every action read). A key that is
    not an agent id becomes `UNREADABLE_ID`, an action `parse_action` refuses becomes
    `UNREADABLE_ROW`, and a reply that is not a mapping is one unreadable row: nothing is lost, so
    the side that checks the rows (`rows_in_space`) counts every fault itself."""
    if not isinstance(actions, Mapping):
        return (np.array([UNREADABLE_ID], dtype=np.int64), np.array([UNREADABLE_ROW], dtype=np.int64),
                f"act returned {type(actions).__name__}, not a dict {{agent_id: action}}")
    ids: list[int] = []
    rows: list[tuple[int, int, int]] = []
    problem = None
    for agent, action in actions.items():
        agent_id = int_index(agent)
        ids.append(UNREADABLE_ID if agent_id is None else agent_id)
        try:
            row = parse_action(agent_id if agent_id is not None else _short(agent), action)
            if not all(_INT64[0] <= v <= _INT64[1] for v in row):
                raise int64_error(agent, action)
        except ActionError as err:
            row = UNREADABLE_ROW
            problem = problem or str(err)[:200]
        rows.append(row)
    return np.array(ids, dtype=np.int64), np.array(rows, dtype=np.int64).reshape(-1, 3), problem


def rows_in_space(rows: np.ndarray, n_obs: int) -> np.ndarray:
    """Which (direction, style, target) rows lie in the action space: Direction 0..4, Style -1..2
    and Target -1..n_obs (-1: no attack; n_obs: the no-target index). Masks and reach are the env's
    business (`apply_indices`): a row in the space may still be dropped there, as a sub-action."""
    direction, style, target = rows[:, 0], rows[:, 1], rows[:, 2]
    return ((direction >= 0) & (direction <= STAY) & (style >= NO_ATTACK) & (style <= 2)
            & (target >= NO_ATTACK) & (target <= n_obs))


def rows_to_actions(ids: np.ndarray, rows: np.ndarray) -> dict[int, dict[str, dict[str, int]]]:
    """The dict API's actions of (id, row) pairs: the move, and the attack unless the row has none
    (style and target -1), which is how the env reads the row too."""
    return {agent: {MOVE: {DIRECTION: d}} if s == NO_ATTACK and t == NO_ATTACK else
            {MOVE: {DIRECTION: d}, ATTACK: {STYLE: s, TARGET: t}}
            for agent, (d, s, t) in zip(ids.tolist(), rows.tolist(), strict=True)}


def _short(value: Any, limit: int = 40) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break reading the reply
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------- flat form
#: The flat action form, for trainers whose policies emit a vector of categoricals (SB3, TorchRL,
#: RLlib, PufferLib): one row (direction, style, target index) per agent, exactly the (n, 3) rows
#: `nmmo.Env.step_arrays` takes. A row whose target is the no-op index attacks nobody.
FLAT_ACTION_PARTS = ((MOVE, DIRECTION), (ATTACK, STYLE), (ATTACK, TARGET))


def flat_action_sizes(config: Config) -> tuple[int, int, int]:
    """How many choices each part of the flat action has: directions, styles, target indices."""
    return len(Direction), 3, config.PLAYER_N_OBS + 1


class FlatActionSpace(spaces.MultiDiscrete):
    """``MultiDiscrete([5, 3, PLAYER_N_OBS + 1])`` whose `sample` also takes the flat mask
    (`flat_mask`: one int8 vector, the layout trainers read), besides gymnasium's tuple of
    per-part masks, so that ``space.sample(mask=obs["action_mask"])`` works as PettingZoo's tests
    and tutorials call it."""

    def sample(self, mask: Any = None, probability: Any = None):
        if mask is not None and not isinstance(mask, tuple):
            mask = np.asarray(mask, dtype=np.int8)
            if mask.shape != (int(self.nvec.sum()),):
                raise ValueError(f"a flat action mask has {int(self.nvec.sum())} entries (5 + 3 + targets), "
                                 f"got shape {mask.shape}")
            mask = tuple(np.split(mask, np.cumsum(self.nvec)[:-1]))
        return super().sample(mask=mask, probability=probability)


def flat_action_space(config: Config) -> FlatActionSpace:
    """The flat action form's space: ``MultiDiscrete([5, 3, PLAYER_N_OBS + 1])``."""
    return FlatActionSpace(np.array(flat_action_sizes(config), dtype=np.int64))


def flat_mask(move_mask: np.ndarray, style_mask: np.ndarray, target_mask: np.ndarray) -> np.ndarray:
    """The flat action form's mask: the three masks side by side (int8, last axis 5 + 3 +
    PLAYER_N_OBS + 1), the layout SB3-contrib, TorchRL and RLlib expect for a MultiDiscrete action.
    Works on one agent's masks or on stacked ones."""
    return np.concatenate([np.asarray(move_mask), np.asarray(style_mask), np.asarray(target_mask)],
                          axis=-1).astype(np.int8, copy=False)


def flat_mask_of(observation: Mapping) -> np.ndarray:
    """`flat_mask` of one raw observation (its ActionTargets)."""
    targets = observation["ActionTargets"]
    return flat_mask(targets[MOVE][DIRECTION], targets[ATTACK][STYLE], targets[ATTACK][TARGET])


def split_flat_mask(mask: np.ndarray, config: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The move, style and target masks of a flat mask (the inverse of `flat_mask`)."""
    n_move, n_style, _ = flat_action_sizes(config)
    mask = np.asarray(mask)
    return mask[..., :n_move], mask[..., n_move:n_move + n_style], mask[..., n_move + n_style:]


def flat_to_action(row: Any) -> dict[str, dict[str, int]]:
    """One flat action (any length-3 integer sequence or array) as the dict API's action."""
    values = np.asarray(row).reshape(-1)
    if values.shape != (3,) or not np.issubdtype(values.dtype, np.integer):
        raise ActionError(f"a flat action is 3 integers (direction, style, target), got {row!r}")
    direction, style, target = (int(v) for v in values)
    return {MOVE: {DIRECTION: direction}, ATTACK: {STYLE: style, TARGET: target}}


def action_to_flat(action: Any, config: Config) -> np.ndarray:
    """One dict API action as a flat row; a missing attack becomes style 0 and the no-op target."""
    direction, style, target = parse_action("action", action)
    if style == NO_ATTACK and target == NO_ATTACK:
        style, target = 0, config.PLAYER_N_OBS
    return np.array([direction, style, target], dtype=np.int64)
