"""Interfaces: small composable transforms between the raw env and a policy.

An `Interface` stands between `nmmo.Env` and a policy. It maps what the env gives (observations,
their space, rewards, done flags, infos, the live agents) to what the policy sees, and maps the
policy's answers back to raw actions. The same interface object serves two places:

- `InterfaceEnv(env, interface)`: a PettingZoo ParallelEnv a trainer steps in the policy's terms.
- `InterfaceAgent(policy, interface)`: a policy that takes raw observations and returns raw actions,
  so an agent trained on an interface plays in raw-env evaluations and tournaments
  (`agent_class(Policy, make_interface)` gives the ``Policy(config)`` class a spec string names).

Every method works on whole ``{agent: value}`` dicts, so transforms can vectorize across agents and
can change the keys (a team becomes one agent). Per step the wrappers call, in this order:
``observations(raw_obs)``, then ``outcome(outcome, raw_obs)``; the policy's answer goes back
through ``actions(actions, raw_obs)`` with the raw observations it answered.

Combinators:

- ``stack(A, B, ...)``: A then B (observations flow A to B, actions back from B to A).
- ``combine(config, *members)``: team-as-agent. Each team becomes one agent whose observation joins
  its members' (each seen through `members`, stacked along a leading axis of size
  PLAYER_TEAM_SIZE) and whose action is split among them.

Shipped transforms: `Flatten` (one fixed-length float vector), `ActionMask` (the masks under
PettingZoo's ``"action_mask"`` key), `RewardShaping` (weighted metric changes added to the reward),
`TeamSpirit` (alpha * team mean + (1 - alpha) * own reward), `Augment` (one of the 8
rotations/flips of the map per episode, consistent for tiles, positions, move directions and masks,
and exactly invertible), `Team` (what `combine` builds), and the forms trainers need
(`nmmo.interfaces.slots`): `Slots` (a fixed set of seats that lives to the horizon under
respawn), `FlatActions` (MultiDiscrete actions with one flat mask) and `AgentNames` (string keys).

An interface instance holds per-episode state (the drawn rotation, team seats, last metric
values): give each env or agent its own, e.g. from a ``make_interface(config)`` function.
"""

from nmmo.interfaces.augment import Augment, dihedral_inverse, dihedral_matrix
from nmmo.interfaces.base import MASK_KEY, TARGETS_KEY, Interface, Outcome, Stack, stack
from nmmo.interfaces.flatten import ActionMask, Flatten
from nmmo.interfaces.rewards import EPISODE_METRICS, INFO_METRICS, STEP_METRICS, RewardShaping, TeamSpirit
from nmmo.interfaces.slots import SLOT_INFO_KEYS, AgentNames, FlatActions, Slots, slots
from nmmo.interfaces.team import Team, combine
from nmmo.interfaces.wrappers import InterfaceAgent, InterfaceEnv, agent_class

__all__ = [
    "EPISODE_METRICS",
    "SLOT_INFO_KEYS",
    "AgentNames",
    "FlatActions",
    "Slots",
    "slots",
    "INFO_METRICS",
    "MASK_KEY",
    "STEP_METRICS",
    "TARGETS_KEY",
    "ActionMask",
    "Augment",
    "Flatten",
    "Interface",
    "InterfaceAgent",
    "InterfaceEnv",
    "Outcome",
    "RewardShaping",
    "Stack",
    "Team",
    "TeamSpirit",
    "agent_class",
    "combine",
    "dihedral_inverse",
    "dihedral_matrix",
    "stack",
]
