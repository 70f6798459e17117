"""Evaluation integrity against a hostile submitter: no reply aborts a tournament, no number in the
results comes from what a worker says, and no submission can work out who controls which agent."""

import json
import struct

import numpy as np
import pytest

from evaluation.episode import with_horizon
from evaluation.results import load_results, save_results
from evaluation.sandbox.channel import ChannelError, decode_reply, encode_actions
from evaluation.tournament import run_tournament
from nmmo.config import load as load_config
from nmmo.replays.replay import load_replay

from .conftest import small_config

# Each attacker writes its own frame straight into the worker's reply pipe (the worker's command
# line names its file descriptor) before the worker's honest reply, so the episode reads it first.
ATTACKS = """
import sys

from evaluation.sandbox.channel import write_frame


def send(payload):
    write_frame(int(sys.argv[2]), payload)


class Attacker:
    payload = b""

    def __init__(self, config):
        pass

    def act(self, observations):
        send(self.payload)
        return {}


class DeepJson(Attacker):  # ~400 KB of nesting: RecursionError in a JSON parser
    payload = b"[" * 200_000 + b"]" * 200_000


class HugeCount(Attacker):  # the old reply with a count of 4,300 digits
    payload = b'{"kind": "ok", "actions": {}, "dropped": ' + b"9" * 4300 + b"}"


class NegativeCount(Attacker):  # the old reply with a negative count
    payload = b'{"kind": "ok", "actions": {}, "dropped": -6999992, "problem": null}'


class ShortFrame(Attacker):  # an actions frame announcing 2**32 - 1 actions and holding 64 bytes
    payload = b"A" + (2**32 - 1).to_bytes(4, "little") + bytes(64)


class Lies(Attacker):  # a well-formed frame of actions for agents it does not control, out of range
    def act(self, observations):
        import numpy as np

        from evaluation.sandbox.channel import encode_actions

        ids = np.arange(1, 17, dtype=np.int64)
        rows = np.full((16, 3), -(2**63), dtype=np.int64)
        send(encode_actions(ids, rows, "all of them are mine"))
        return {}
"""
ATTACKERS = ("DeepJson", "HugeCount", "NegativeCount", "ShortFrame", "Lies")


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """One tournament in which every attacker plays (4 ticks), saved and loaded back."""
    directory = tmp_path_factory.mktemp("attacks")
    (directory / "attacks.py").write_text(ATTACKS)
    specs = [f"{directory / 'attacks.py'}:{name}" for name in ATTACKERS]
    results = run_tournament(small_config(PLAYER_N=18), [*specs, "random"], episodes=1, ticks=4, workers=0,
                             progress=False, max_restarts=2)
    save_results(results, directory / "out")
    return dict(zip(ATTACKERS, specs, strict=True)), results, load_results(directory / "out")


def test_no_reply_aborts_the_tournament_and_the_attacker_is_charged(attacked):
    specs, results, loaded = attacked
    assert loaded["leaderboard"] == results["leaderboard"]  # written, and it verifies itself
    for name in ("DeepJson", "HugeCount", "NegativeCount", "ShortFrame"):
        faults = results["faults"][specs[name]]
        assert faults["malformed"] >= 1 and faults["restarts"] >= 1, (name, faults)
        assert any("unreadable reply" in message for message in faults["messages"]), (name, faults["messages"])
        assert faults["dropped_actions"] == 0  # no number of theirs reaches the results
    honest = results["faults"]["random"]
    assert honest["malformed"] == honest["exception"] == honest["timeout"] == 0


def test_counts_are_made_by_the_episode_from_the_rows(attacked):
    specs, results, _ = attacked
    faults = results["faults"][specs["Lies"]]
    # every row it sent is counted by the episode (16 a frame; the worker's own empty replies
    # queue behind the forged ones, so 2 to 4 forged frames are read in 4 ticks)
    assert faults["dropped_actions"] in (32, 48, 64) and faults["malformed"] >= 2
    assert any("does not control" in message or "outside the action space" in message
               for message in faults["messages"])
    for spec in results["policies"]:
        assert all(value >= 0 for key, value in results["faults"][spec].items() if key != "messages")


@pytest.mark.parametrize("seed", range(3))
def test_garbage_frames_are_channel_errors_never_other_exceptions(seed):
    rng = np.random.default_rng(seed)
    for _ in range(2000):
        size = int(rng.integers(0, 80))
        payload = bytes(rng.integers(0, 256, size, dtype=np.uint8))
        if rng.random() < 0.5:  # frames that start like an actions frame
            payload = b"A" + struct.pack("<I", int(rng.integers(0, 5))) + payload
        try:
            reply = decode_reply(payload)
        except ChannelError:
            continue
        assert reply.kind in ("ready", "error", "actions")
        if reply.kind == "actions":
            assert reply.ids.dtype == np.int64 and reply.rows.shape == (len(reply.ids), 3)
            assert reply.text is None or len(reply.text) <= 300
    for payload in (b"[" * 200_000, b"A", b"A\x01\x00\x00\x00" + bytes(31), b"R!", b"Z", b"",
                    json.dumps({"kind": "ok", "actions": {}, "dropped": -1}).encode()):
        with pytest.raises(ChannelError):
            decode_reply(payload)
    ids, rows = np.array([3, 5]), np.array([[0, -1, -1], [4, 2, 7]])
    reply = decode_reply(encode_actions(ids, rows, "note"))
    assert reply.ids.tolist() == [3, 5] and reply.rows.tolist() == rows.tolist() and reply.text == "note"


# A submission that searches the run seeds for the one whose reset seed it was given, then
# recomputes the deal with the importable functions, and reports its guess of every agent's
# policy (one digit per agent id; ids are slots + 1 in the canonical format) in the one channel
# it has: the message of an exception, which the episode records as a fault.
RECOVER = """
from evaluation.episode import deal, episode_seeds, policy_seed


class Agent:
    def __init__(self, config):
        self.teams = config.PLAYER_N // config.PLAYER_TEAM_SIZE

    def reset(self, seed):
        found = None
        for run in range(32):
            for episode, env_seed in enumerate(episode_seeds(run, 4)):
                for index in range(3):
                    if policy_seed(env_seed, index) == seed:
                        found = env_seed, index
        env_seed, index = found or (episode_seeds(0, 4)[0], 0)  # no match: the public run seed's first
        guess = deal(env_seed, self.teams, 3)
        self.report = f"found={found is not None} labels={''.join(map(str, guess.tolist()))}"

    def act(self, observations):
        raise RuntimeError(self.report)
"""


def test_no_submission_recovers_the_deal_from_its_reset_seed(tmp_path):
    """Over 2 canonical-format episodes, the attacker's guess of the policy of each agent it does
    not control is right about as often as a coin between the other two policies, not always."""
    (tmp_path / "recover.py").write_text(RECOVER)
    spec = f"{tmp_path / 'recover.py'}:Agent"
    config = with_horizon(load_config("tournament"), 1)
    results = run_tournament(config, [spec, "scripted:Forage"], episodes=2, seed=0, workers=0, progress=False,
                             record_dir=str(tmp_path / "replays"))
    guesses = []
    for episode in results["episodes"]:
        [report] = [m for m in episode["faults"][spec]["messages"] if "labels=" in m]
        found, labels = report.split("found=")[1].split()[0], report.split("labels=")[1][:99]
        guesses.append({"found": found == "True", "labels": [int(c) for c in labels]})
    assert len(guesses) == 2 and not any(g["found"] for g in guesses)
    right = total = 0
    for episode, guess in enumerate(guesses):
        replay = load_replay(tmp_path / "replays" / f"episode_{episode:03d}.replay")
        team_policy = np.array(replay.header["team_policy"])
        frame = replay.frame(0)
        players = np.flatnonzero(frame["alive"].astype(bool) & (frame["kind"] == 0))
        for slot in players.tolist():
            truth = team_policy[frame["team"][slot]]
            if truth != 0:  # the attacker knows its own agents: judge it on the others
                right += guess["labels"][int(frame["id"][slot]) - 1] == truth
                total += 1
    assert total == 132
    assert right / total < 0.5 + 3 * 0.5 / np.sqrt(total), right / total  # chance: 1 in 2 at best
