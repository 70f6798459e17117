"""The forms trainers need: `Slots` (a fixed set of agents for a world with respawn),
`FlatActions` (the MultiDiscrete action form of `nmmo.core.actions`) and `AgentNames` (string keys).

Most trainers built on PettingZoo (SuperSuit's vector envs for SB3, TorchRL's `PettingZooWrapper`,
RLlib's `ParallelPettingZooEnv`, PufferLib's emulation) size their buffers from `possible_agents`
and expect every one of them at reset. With respawn, `nmmo.Env` issues a new agent id per life
(PettingZoo forbids reviving one), so `possible_agents` runs to thousands of ids. `Slots` gives
them what they expect: PLAYER_N agents that live from reset to the horizon, each standing for
one seat that successive lives fill.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium import spaces

from nmmo.config import Config
from nmmo.core.actions import ATTACK, DIRECTION, MOVE, STYLE, TARGET, ActionError, FlatActionSpace, flat_mask_of
from nmmo.core.enums import EntityAttr
from nmmo.core.metrics import METRICS
from nmmo.envs.outcomes import LIFE_KEY
from nmmo.interfaces.base import MASK_KEY, TARGETS_KEY, Interface, Outcome, _require_raw

#: The numbers `Slots` reports in every seat's infos, every step (``"fixed"`` infos), in this order.
SLOT_INFO_KEYS = ("agent_id", "alive", "died", "invalid_actions", "attack_out_of_reach", "achievement_points",
                  "life_ended", *(f"life_{name}" for name in METRICS))


class Slots(Interface):
    """A fixed set of agents, one per seat, alive from reset to the horizon.

    Seat keys are ``name.format(i)`` for i in 0..n_slots-1 (``"player_0"``, ...; `name=None`: the
    ints i). An agent takes the lowest free seat when it spawns and keeps it for its life; its final
    observation keeps the seat on the step it dies, unless a newcomer needs it.

    - Observation: the seated agent's raw observation; an empty seat (its agent dead, the next
      not yet spawned) sees zeros, with only "stay", any style and the no-op target allowed (its
      action is ignored), AgentId 0.
    - Reward: the sum of the rewards of the lives in the seat that step (a death's -1 included).
    - Done flags: with respawn a seat is neither terminated nor truncated before the horizon,
      where every seat is truncated: a life ending is a transition inside the seat's episode, so
      value targets bootstrap across it (each life's -1 is still paid). Without respawn a seat
      ends with its agent.
    - Infos (``infos="fixed"``): the same numbers for every seat every step, in `SLOT_INFO_KEYS`
      (tensor-friendly: TorchRL stacks them): the agent id (0 when empty), whether it is alive,
      whether a life ended in the seat this step and, when one did, its lifetime metrics
      ``life_<metric>`` (0 otherwise: weight by ``life_ended`` when averaging). ``infos="sparse"``:
      only the numbers that apply (for loggers that average what they are given, as PufferLib's).
    """

    def __init__(self, n_slots: int, respawn: bool = True, name: str | None = "player_{}",
                 infos: str = "fixed") -> None:
        if infos not in ("fixed", "sparse"):
            raise ValueError(f"Slots infos must be 'fixed' or 'sparse', got {infos!r}")
        if int(n_slots) < 1:
            raise ValueError(f"Slots needs at least one seat, got n_slots={n_slots!r}")
        self.n_slots, self.respawn, self.infos = int(n_slots), bool(respawn), infos
        self.keys = [name.format(i) if name is not None else i for i in range(self.n_slots)]
        self._index = {key: i for i, key in enumerate(self.keys)}
        self._empty: dict | None = None
        self._clear()

    def _clear(self) -> None:
        self._agent: list[Any] = [None] * self.n_slots  # the agent in each seat
        self._seat: dict[Any, int] = {}
        self._members: list[list] = [[] for _ in range(self.n_slots)]  # lives in each seat this step
        self._live = [True] * self.n_slots
        self._started = False

    def reset(self, seed: int | None = None) -> None:
        self._clear()

    def possible_agents(self, agents: list) -> list:
        return list(self.keys)

    # ------------------------------------------------------------ seating
    def _sit(self, obs: dict) -> None:
        """Free the seats of agents gone; seat newcomers; remember each seat's lives this step."""
        for i, agent in enumerate(self._agent):
            if agent is not None and agent not in obs:
                self._agent[i] = None
                self._seat.pop(agent, None)
        dying = {a for a, ob in obs.items() if ob["Entity"][0, EntityAttr.HEALTH] <= 0}
        self._members = [[a] if a is not None else [] for a in self._agent]
        free = [i for i, a in enumerate(self._agent) if a is None]  # once per step, not once per newcomer
        for agent in obs:
            if agent in self._seat:
                continue
            if free:
                seat = heapq.heappop(free)  # a sorted list is a heap: the lowest free seat, in O(log n)
            elif agent not in dying:  # a newcomer takes the seat of a life ending now
                seat = next((i for i, a in enumerate(self._agent) if a in dying), None)
            else:
                seat = None
            if seat is None:
                continue  # more lives than seats can only be a life that ended as it began: unseen
            if self._agent[seat] is not None:
                self._seat.pop(self._agent[seat])
            self._agent[seat] = agent
            self._seat[agent] = seat
            self._members[seat].append(agent)

    def _empty_observation(self, like: Mapping) -> dict:
        """An empty seat's observation: zeros, with only the no-op actions allowed."""
        if self._empty is None:
            empty = {key: np.zeros_like(value) if isinstance(value, np.ndarray) else 0 for key, value in like.items()
                     if key != TARGETS_KEY}
            targets = like[TARGETS_KEY]
            move = np.zeros_like(targets[MOVE][DIRECTION])
            move[-1] = 1  # stay
            style = np.ones_like(targets[ATTACK][STYLE])
            target = np.zeros_like(targets[ATTACK][TARGET])
            target[-1] = 1  # the no-op
            empty[TARGETS_KEY] = {MOVE: {DIRECTION: move}, ATTACK: {STYLE: style, TARGET: target}}
            self._empty = empty
        tick = like.get("CurrentTick", 0)
        return {**self._empty, "CurrentTick": tick} if "CurrentTick" in self._empty else self._empty

    def observations(self, obs: dict) -> dict:
        _require_raw(obs, "Slots", ("Entity",))
        self._sit(obs)
        if not obs and self._empty is None:
            raise ValueError("Slots needs one observation to learn the observation's layout, and the env gave none")
        like = next(iter(obs.values())) if obs else None
        return {key: obs[agent] if agent is not None else self._empty_observation(like or self._empty)
                for key, agent in zip(self.keys, self._agent, strict=True) if self._live[self._index[key]]}

    # ------------------------------------------------------------ actions
    def actions(self, actions: dict, obs: dict) -> dict:
        raw = {}
        for key, action in actions.items():
            seat = self._index.get(key)
            if seat is None:
                raise ActionError(f"action for {key!r}, which is not a seat of this env (seats: {self.keys[0]!r} "
                                  f"to {self.keys[-1]!r})")
            agent = self._agent[seat]
            if agent is not None and agent in obs and obs[agent]["Entity"][0, EntityAttr.HEALTH] > 0:
                raw[agent] = action
        return raw

    # ------------------------------------------------------------ outcome
    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        over = self._started and not outcome.agents  # the reset's outcome starts the episode
        self._started = True
        rewards, terminations, truncations, infos = {}, {}, {}, {}
        for i, key in enumerate(self.keys):
            if not self._live[i]:
                continue
            lives = self._members[i]
            died = any(outcome.terminations.get(a, False) for a in lives)
            agent = self._agent[i]
            alive = agent is not None and agent in outcome.agents
            rewards[key] = float(sum(outcome.rewards.get(a, 0.0) for a in lives))
            ended = not self.respawn and not alive and (died or agent is None)  # its one life is over
            terminations[key] = bool(ended)
            truncations[key] = bool(over and not ended)
            infos[key] = self._info(agent, alive, died, lives, outcome.infos)
            if ended or over:
                self._live[i] = False
        agents = [key for i, key in enumerate(self.keys) if self._live[i]]
        return replace(outcome, rewards=rewards, terminations=terminations, truncations=truncations,
                       infos=infos, agents=agents)

    def _info(self, agent: Any, alive: bool, died: bool, lives: list, raw: dict) -> dict:
        """One seat's numbers this step (see the class notes)."""
        fixed = self.infos == "fixed"
        info: dict[str, float | int] = {"agent_id": int(agent) if isinstance(agent, (int, np.integer)) else 0,
                                        "alive": int(alive), "died": int(died)}
        life = None
        for a in lives:
            details = raw.get(a) or {}
            for key in ("invalid_actions", "attack_out_of_reach", "achievement_points"):
                if key in details:
                    info[key] = info.get(key, 0) + int(details[key])
            if LIFE_KEY in details:
                life = details[LIFE_KEY]
        if life is not None or fixed:
            info["life_ended"] = int(life is not None)
            for name in METRICS:
                info[f"life_{name}"] = float(life[name]) if life is not None else 0.0
        if fixed:  # every key, in one order
            return {key: info.get(key, 0) for key in SLOT_INFO_KEYS}
        return info


def slots(config: Config, name: str | None = "player_{}", infos: str = "fixed") -> Slots:
    """`Slots` for `config`: PLAYER_N seats, respawn as the config has it."""
    respawn = bool(config.PLAYER_RESPAWN and config.PLAYER_SPAWN_ATTEMPTS > 0)
    return Slots(config.PLAYER_N, respawn=respawn, name=name, infos=infos)


# ------------------------------------------------------------ flat actions
class FlatActions(Interface):
    """Actions in the flat form of `nmmo.core.actions`: ``MultiDiscrete([5, 3, PLAYER_N_OBS + 1])``
    rows (direction, style, target index; the last target index attacks nobody). The observation's
    ActionTargets become one flat mask under ``"action_mask"`` (`nmmo.core.actions.flat_mask`; with
    `mask=False` they are dropped). Reads raw observations: put it before `Flatten`."""

    def __init__(self, mask: bool = True) -> None:
        self.mask = mask

    def action_space(self, space: spaces.Space) -> spaces.Space:
        sizes = [space[MOVE][DIRECTION].n, space[ATTACK][STYLE].n, space[ATTACK][TARGET].n]
        return FlatActionSpace(np.array(sizes, dtype=np.int64))

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        if not isinstance(space, spaces.Dict) or TARGETS_KEY not in space.spaces:
            raise ValueError(f"FlatActions reads the raw {TARGETS_KEY} masks: put it before Flatten")
        out = {k: s for k, s in space.spaces.items() if k != TARGETS_KEY}
        if self.mask:
            targets = space[TARGETS_KEY]
            size = sum(int(np.prod(s.shape)) for s in (targets[MOVE][DIRECTION], targets[ATTACK][STYLE],
                                                       targets[ATTACK][TARGET]))
            out[MASK_KEY] = spaces.MultiBinary(size)
        return spaces.Dict(out)

    def observations(self, obs: dict) -> dict:
        _require_raw(obs, "FlatActions", ())
        out = {}
        for agent, ob in obs.items():
            view = {k: v for k, v in ob.items() if k != TARGETS_KEY}
            if self.mask:
                view[MASK_KEY] = flat_mask_of(ob)
            out[agent] = view
        return out

    def actions(self, actions: dict, obs: dict) -> dict:
        if not actions:
            return {}
        agents = list(actions)
        try:
            rows = np.asarray([np.asarray(actions[a]).reshape(-1) for a in agents])
        except ValueError:
            rows = np.zeros((0, 0))
        if rows.ndim != 2 or rows.shape[1] != 3 or not np.issubdtype(rows.dtype, np.integer):
            bad = next((a for a in agents if np.asarray(actions[a]).shape not in ((3,), (1, 3))
                        or not np.issubdtype(np.asarray(actions[a]).dtype, np.integer)), agents[0])
            raise ActionError(f"agent {bad!r}: a flat action is 3 integers (direction, style, target index), "
                              f"got {actions[bad]!r}")
        return {agent: {MOVE: {DIRECTION: d}, ATTACK: {STYLE: s, TARGET: t}}
                for agent, (d, s, t) in zip(agents, rows.tolist(), strict=True)}


# ------------------------------------------------------------ agent names
class AgentNames(Interface):
    """String agent keys (``"player_3"`` for agent 3; `template` sets the form) for libraries that
    read a group from the name (TorchRL splits on "_"). Ids stay ints in the raw env."""

    def __init__(self, template: str = "player_{}") -> None:
        if "{}" not in template:
            raise ValueError(f"an agent name template needs a '{{}}' for the id, got {template!r}")
        self.template = template
        prefix, _, suffix = template.partition("{}")
        self._prefix, self._suffix = prefix, suffix

    def _name(self, agent: Any) -> str:
        return self.template.format(agent)

    def _id(self, name: Any) -> int:
        text = str(name)
        core = text[len(self._prefix): len(text) - len(self._suffix) if self._suffix else None]
        if not (text.startswith(self._prefix) and text.endswith(self._suffix) and core.isdigit()):
            raise ActionError(f"action for {name!r}, which is not an agent name of the form {self.template!r}")
        return int(core)

    def possible_agents(self, agents: list) -> list:
        return [self._name(a) for a in agents]

    def observations(self, obs: dict) -> dict:
        return {self._name(a): ob for a, ob in obs.items()}

    def actions(self, actions: dict, obs: dict) -> dict:
        return {self._id(name): action for name, action in actions.items()}

    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        def rename(values: dict) -> dict:
            return {self._name(a): v for a, v in values.items()}

        return Outcome(rename(outcome.rewards), rename(outcome.terminations), rename(outcome.truncations),
                       rename(outcome.infos), [self._name(a) for a in outcome.agents])
