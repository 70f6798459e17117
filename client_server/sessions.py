"""Viewer sessions: a replay's playback for one viewer, and a live run shared by all its viewers.

- `ReplayViewer`: one viewer's playback of a replay (play, pause, step, seek, speed, overlays).
- `LiveSession`: one shared simulation (an env driven by a policy) ticking at a chosen rate in a
  worker thread; every `LiveViewer` gets the same packets through its own queue.

Built-in overlays come from `nmmo.replays.overlays.builtin_heatmap` for both, so a live run and its replay
show the same picture. Sessions only read the engine's state; they never change it. A run with tasks
(a replay whose header has ``tasks``, a live env made with tasks) also sends the task fields and the
task names, and offers the ``tasks done`` overlay. A run of a minigame sends its state with every
tick packet (`packets.game_field`) and names it in the header.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
import weakref
from collections import OrderedDict

import numpy as np
from fastapi import WebSocket

from client_server import packets
from client_server.packets import dumps, empty_tick, header_packet, overlay_field, tick_packet, with_overlay
from client_server.protocol import CommandError
from nmmo.replays.overlays import VALUE_BLANK, add_completions, add_visits, blank_note, builtin_heatmap, builtin_names
from nmmo.replays.recording import fill_values

#: Built-in overlays change every tick; viewers get them again at most this often (seconds).
BUILTIN_REFRESH_S = 1.0
#: The built-in overlays of every replay (one with tasks offers ``tasks done`` too: `replay_overlays`).
REPLAY_OVERLAYS = builtin_names(tasks=False)
#: Value landscapes a live session keeps (one per map; a 160² map's is 100 kB).
LANDSCAPES_KEPT = 16


def has_tasks(replay) -> bool:
    """Whether a replay was recorded with tasks (its header names them)."""
    return packets.task_summary(replay.header.get("tasks")) is not None


def has_values(replay) -> bool:
    """Whether a replay recorded its agents' value estimates (`nmmo.Env.record_values`)."""
    return replay.header.get("values") is True


def replay_overlays(replay) -> list[str]:
    """The overlays a replay offers: the built-ins (``tasks done`` only with tasks), then its own."""
    return [*builtin_names(has_tasks(replay)), *replay.overlay_names]


def replay_overlay(replay, name: str, tick: int, visits: np.ndarray | None,
                   completions: np.ndarray | None = None) -> tuple[np.ndarray, float, float] | None:
    """A replay's overlay at `tick`: recorded user overlays, or a built-in computed from its frame
    by `nmmo.replays.overlays.builtin_heatmap`, as the live env computes it (`visits` and `completions`:
    the counts up to `tick`)."""
    from nmmo.replays.replay import quantize

    if name in replay.overlay_names:
        return replay.overlay_at(name, tick)
    if name not in builtin_names(has_tasks(replay)):
        return None
    header = replay.header
    heat = builtin_heatmap(name, replay.frame(tick), replay.material_at(tick), int(header["border"]),
                           int(header["center"]), visits, completions)
    return quantize(heat)


#: Encoded tick packets per replay, shared by every viewer of it (viewers of one replay mostly
#: watch the same ticks; encoding once per tick instead of once per viewer keeps 200 viewers cheap).
_PACKETS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
PACKETS_KEPT = 4096


def encoded_tick(replay, tick: int, full: bool) -> str:
    """The JSON tick packet of `tick` (a full one, or the delta from the tick before), encoded once."""
    cache = _PACKETS.setdefault(replay, OrderedDict())
    key = (tick, full or tick == 0)
    text = cache.get(key)
    if text is None:
        frame = replay.frame(tick)
        previous = None if key[1] else replay.frame(tick - 1)
        text = dumps(tick_packet(tick, frame, previous, None if key[1] else replay.tile_changes(tick),
                                 packets.sent_fields(has_tasks(replay), has_values(replay)),
                                 game=replay.game_state(tick)))
        cache[key] = text
        if len(cache) > PACKETS_KEPT:
            cache.popitem(last=False)
    return text


class ReplayViewer:
    """One viewer's playback of a replay."""

    def __init__(self, websocket: WebSocket, replay, name: str) -> None:
        self.ws, self.replay, self.name = websocket, replay, name
        self.tick, self.playing, self.speed = 0, False, 10.0
        self.overlay: str | None = None
        self.follow: int | None = None
        self.visits: np.ndarray | None = None  # made when the viewer first asks for the visits overlay
        self.visits_upto = -1
        self.completions: np.ndarray | None = None  # the same for the tasks done overlay
        self.completions_upto = -1
        self.fields = packets.sent_fields(has_tasks(replay), has_values(replay))
        self.overlay_sent_at = -1e9
        self.wake = asyncio.Event()

    def _accumulate_visits(self, tick: int) -> None:
        if self.visits is None:
            self.visits = np.zeros((self.replay.size, self.replay.size), dtype=np.float32)
        if tick < self.visits_upto:
            self.visits[:] = 0
            self.visits_upto = -1
        for t in range(self.visits_upto + 1, tick + 1):
            add_visits(self.visits, self.replay.frame(t))
        self.visits_upto = tick

    def _accumulate_completions(self, tick: int) -> None:
        if self.completions is None:
            self.completions = np.zeros((self.replay.size, self.replay.size), dtype=np.float32)
        if tick < self.completions_upto:
            self.completions[:] = 0
            self.completions_upto = -1
        for t in range(self.completions_upto + 1, tick + 1):
            add_completions(self.completions, self.replay.frame(t), self.replay.frame(t - 1) if t > 0 else None)
        self.completions_upto = tick

    async def send_header(self) -> None:
        header = self.replay.header
        overlays = replay_overlays(self.replay)
        blank = {name: blank_note(name, header.get("overlay_blank")) for name in overlays}
        await self.ws.send_text(dumps(header_packet(
            "replay", self.replay.material_at(self.tick), center=header["center"], border=header["border"],
            ticks=self.replay.ticks, tick=self.tick, overlays=overlays, blank=blank,
            config={"name": header.get("config_name"), "PLAYER_N": header.get("n_players"),
                    "HORIZON": header.get("horizon"), "map_seed": header.get("map_seed"),
                    "policies": header.get("policies"), "team_policy": header.get("team_policy")},
            tasks=packets.task_summary(header.get("tasks")),
            game=packets.game_summary(header.get("game")) if self.replay.games is not None else None,
            values=has_values(self.replay))))

    async def send_tick(self, full: bool) -> None:
        text = encoded_tick(self.replay, self.tick, full)
        if self.overlay is not None:
            loop = asyncio.get_running_loop()
            user = self.overlay in self.replay.overlay_names
            if full or not user or loop.time() - self.overlay_sent_at >= BUILTIN_REFRESH_S or (
                    user and self.tick in self.replay.overlay_index[:, 0]):
                self.overlay_sent_at = loop.time()
                if self.overlay == "visits":
                    self._accumulate_visits(self.tick)
                elif self.overlay == "tasks done":
                    self._accumulate_completions(self.tick)
                text = with_overlay(text, overlay_field(self.overlay, quantized=replay_overlay(
                    self.replay, self.overlay, self.tick, self.visits, self.completions)))
        await self.ws.send_text(text)

    async def send_status(self) -> None:
        await self.ws.send_text(dumps({"type": "status", "playing": self.playing, "speed": self.speed,
                                       "tick": self.tick, "ticks": self.replay.ticks, "overlay": self.overlay,
                                       "follow": self.follow}))

    async def handle(self, command: dict) -> None:
        name = command["cmd"]
        if name == "play":
            self.playing = True
        elif name == "pause":
            self.playing = False
        elif name == "speed":
            self.speed = command["value"]
        elif name == "step":
            self.playing = False
            if self.tick < self.replay.ticks:
                self.tick += 1
                await self.send_tick(full=False)
        elif name == "seek":
            if command["tick"] > self.replay.ticks:
                raise CommandError(f"tick {command['tick']} is past the end of this replay ({self.replay.ticks})")
            self.tick = command["tick"]
            await self.send_tick(full=True)
        elif name == "overlay":
            if command["name"] is not None and command["name"] not in replay_overlays(self.replay):
                raise CommandError(f"no overlay named {command['name']!r}")
            self.overlay = command["name"]
            self.overlay_sent_at = -1e9
            if self.overlay is None:
                await self.ws.send_text(with_overlay(dumps(empty_tick(self.tick, self.fields)), overlay_field(None)))
            else:
                await self.send_tick(full=True)
        elif name == "follow":
            self.follow = command["id"]
        self.wake.set()
        await self.send_status()

    async def play_loop(self) -> None:
        while True:
            if self.playing and self.tick < self.replay.ticks:
                self.tick += 1
                await self.send_tick(full=False)
                if self.tick >= self.replay.ticks:
                    self.playing = False
                    await self.send_status()
                await asyncio.sleep(1.0 / self.speed)
            else:
                self.wake.clear()
                await self.wake.wait()


# ------------------------------------------------------------------ live
class LiveSession:
    """A shared simulation: an env driven by one policy, ticking in a thread at `speed` ticks/s;
    `tasks` gives its agents tasks (`nmmo.Env`'s `tasks`; None: the config's TASKS, if any)."""

    def __init__(self, config, policy_spec: str = "scripted:Combat", seed: int = 0, speed: float = 10.0,
                 record: bool = False, tasks=None) -> None:
        import nmmo
        from nmmo.policy import load_policy_class

        self.env = nmmo.Env(config, seed=seed, record=record, tasks=tasks)
        self.policy = load_policy_class(policy_spec)(self.env.config)
        if hasattr(self.policy, "reset"):
            self.policy.reset(seed)
        #: whether the policy has value estimates (`last_values`): then the "value" overlays, and each
        #: agent's estimate in the frames (the inspector's value row), as a replay of it has
        self.valued = isinstance(getattr(self.policy, "last_values", None), dict)
        self.fields = packets.sent_fields(self.env.tasks is not None, self.valued)
        self.policy_spec = policy_spec
        self.landscape_policy = None  # made when a value landscape is first painted
        self.landscapes: OrderedDict[bytes, np.ndarray] = OrderedDict()  # by map (a digest of its materials)
        self.obs, _ = self.env.reset()
        self.values = self._value_overlay()
        self.actions = self._act()
        self.frame = self._frame()
        self.material = self.env.material.copy()
        self.tick_json = dumps(tick_packet(0, self.frame, None, fields=self.fields, game=self.env.game_state()))
        self.playing, self.speed = True, speed
        self.viewers: set[LiveViewer] = set()
        self.lock = threading.Lock()
        self.step_requests = 0
        self.task: asyncio.Task | None = None

    def _value_overlay(self):
        """For a policy with value estimates (`last_values`, as trained checkpoints have) a "value
        landscape" overlay (`_paint_landscape`) and a "value" overlay: the mean estimate per tile
        this episode (`ValueMap`, returned); None otherwise."""
        from nmmo.replays.overlays import ValueMap

        if not self.valued:
            return None
        self._paint_landscape()
        values = ValueMap(self.env.config.MAP_SIZE)
        self.env.overlays.register("value", values.heatmap(), blank=VALUE_BLANK)
        return values

    def _paint_landscape(self) -> None:
        """The policy's value landscape on this episode's map (`nmmo.envs.landscape`), by an instance of
        its own (the playing one keeps its memory), computed once per map: a live run goes round
        its pool's maps, and a big map's landscape takes seconds. The same as a replay's of the
        same checkpoint and map, byte for byte."""
        from nmmo.envs.landscape import BLANK, NAME, value_landscape
        from nmmo.policy import load_policy_class

        key = hashlib.blake2b(self.env.material.tobytes(), digest_size=16).digest()
        if key not in self.landscapes:
            if self.landscape_policy is None:
                self.landscape_policy = load_policy_class(self.policy_spec)(self.env.config)
            self.landscapes[key] = value_landscape(self.landscape_policy, self.env, progress=False)
            while len(self.landscapes) > LANDSCAPES_KEPT:
                self.landscapes.popitem(last=False)
        self.landscapes.move_to_end(key)
        self.env.overlays.register(NAME, self.landscapes[key], blank=BLANK)

    def header(self) -> dict:
        config = self.env.config
        return header_packet("live", self.material, center=config.MAP_CENTER, border=config.MAP_BORDER, ticks=None,
                             tick=self.env.tick, overlays=self.env.overlays.names(),
                             blank={name: self.env.overlays.blank(name) for name in self.env.overlays.names()},
                             config={"name": config.name, "PLAYER_N": config.PLAYER_N,
                                     "NPC_N": config.NPC_N if config.has("NPC") else 0,
                                     "HORIZON": config.HORIZON, "policy": self.policy_spec,
                                     "policies": [self.policy_spec]},
                             tasks=packets.task_summary(self.env.task_header().get("tasks")),
                             game=packets.game_summary(self.env.game_state()), values=self.valued)

    def _act(self) -> dict:
        """The policy's actions for the observations just made (the next tick's), computed as soon as
        the world is observed so that its value estimates belong to the frame shown now; they also
        go into the "value" overlay (`ValueMap`) and, when recording, the replay. At the end of an
        episode there is nobody to act for: {}."""
        live = {a: o for a, o in self.obs.items() if a in self.env.agents}
        if self.env.done or not live:
            return {}
        actions = self.policy.act(live)
        if self.values is not None:
            self.values.add_observed(live, self.policy.last_values)
            self.env.overlays.update("value", self.values.heatmap())
            self.env.record_values(self.policy.last_values)  # a recorded live run keeps them, as `nmmo run` does
        return actions

    def _frame(self) -> dict[str, np.ndarray]:
        """The viewer's columns now, with each agent's value estimate when the policy has them."""
        frame = self.env.frame()
        if self.valued and not self.env.done and self.env.agents:
            fill_values(frame, self.policy.last_values)
        return frame

    def advance(self) -> tuple[str, bool]:
        """One tick (runs in a worker thread); returns the encoded packet and whether the world reset."""
        with self.lock:
            env = self.env
            reset = False
            if env.done or not env.agents:
                self.obs, _ = env.reset()
                self.values = self._value_overlay()
                reset = True
            else:
                self.obs, *_ = env.step(self.actions)
            self.actions = self._act()
            frame = self._frame()
            material = env.material
            changed = np.flatnonzero(material.ravel() != self.material.ravel())
            tiles = np.stack([changed, material.ravel()[changed]], axis=1)
            self.material = material.copy()
            packet = tick_packet(env.tick, frame, None if reset else self.frame, None if reset else tiles, self.fields,
                                 game=env.game_state())
            self.frame = frame
            self.tick_json = dumps(packet)
            return self.tick_json, reset

    def full_packet(self) -> str:
        """The current state as a full tick packet."""
        with self.lock:
            return dumps(tick_packet(self.env.tick, self.frame, None, fields=self.fields, game=self.env.game_state()))

    def overlay(self, name: str) -> dict:
        with self.lock:
            return overlay_field(name, self.env.overlays.get(name))

    async def run(self) -> None:
        while True:
            if self.playing or self.step_requests:
                self.step_requests = max(0, self.step_requests - 1)
                start = asyncio.get_running_loop().time()
                text, reset = await asyncio.to_thread(self.advance)
                for viewer in list(self.viewers):
                    viewer.push(text, reset)
                elapsed = asyncio.get_running_loop().time() - start
                await asyncio.sleep(max(0.0, 1.0 / self.speed - elapsed))
            else:
                await asyncio.sleep(0.02)

    def status(self) -> dict:
        return {"type": "status", "playing": self.playing, "speed": self.speed, "tick": self.env.tick,
                "ticks": None}


class LiveViewer:
    """One viewer of the live session: an outgoing queue drained by its own sender task."""

    def __init__(self, websocket: WebSocket, session: LiveSession) -> None:
        self.ws, self.session = websocket, session
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=256)
        self.overlay: str | None = None
        self.follow: int | None = None
        self.overlay_sent_at = -1e9
        self.needs_full = False

    def push(self, text: str, reset: bool) -> None:
        if reset:
            self._put(dumps(self.session.header()))
        if self.needs_full:  # it missed a delta: resynchronise it with the whole state
            self.needs_full = False
            text = self.session.full_packet()
        if self.overlay is not None:
            now = asyncio.get_running_loop().time()
            user = self.overlay in self.session.env.overlays.user_names()
            if user or now - self.overlay_sent_at >= BUILTIN_REFRESH_S:
                self.overlay_sent_at = now
                text = with_overlay(text, self.session.overlay(self.overlay))
        self._put(text)

    def _put(self, text: str) -> None:
        if self.queue.full():  # a slow viewer drops old packets rather than stalling everyone
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
                self.needs_full = True
        self.queue.put_nowait(text)

    async def sender(self) -> None:
        while True:
            await self.ws.send_text(await self.queue.get())

    async def handle(self, command: dict) -> None:
        session, name = self.session, command["cmd"]
        if name == "play":
            session.playing = True
        elif name == "pause":
            session.playing = False
        elif name == "step":
            session.playing = False
            session.step_requests += 1
        elif name == "speed":
            session.speed = command["value"]
        elif name == "seek":
            raise CommandError("seek works on replays only; a live run cannot go back")
        elif name == "overlay":
            if command["name"] is not None and command["name"] not in session.env.overlays.names():
                raise CommandError(f"no overlay named {command['name']!r}")
            self.overlay = command["name"]
            self.overlay_sent_at = -1e9
            if self.overlay is None:
                self._put(with_overlay(dumps(empty_tick(session.env.tick, session.fields)), overlay_field(None)))
        elif name == "follow":
            self.follow = command["id"]
        self._put(dumps({**session.status(), "overlay": self.overlay, "follow": self.follow}))
