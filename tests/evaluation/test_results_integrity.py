"""A results.json rewritten after the run is refused by `load_results`, naming the field (issue 30).

One real tournament (a submission, `random` and the anchor) is played and saved per module; each
test rewrites a copy of its results.json the way an attacker would and loads it back.
"""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaluation.results import load_results, save_results
from evaluation.tournament import run_tournament

from .conftest import small_config, write_policy

TICKS = 16
ATTACKER = """
    class Agent:
        def __init__(self, config):
            pass

        def act(self, observations):
            return {agent: {"Move": {"Direction": 1}} for agent in observations}
"""


@pytest.fixture(scope="module")
def played(tmp_path_factory, map_cache) -> tuple[Path, dict[str, Any], str]:
    """The saved directory, the result dict and the attacker's spec of one real tournament."""
    directory = tmp_path_factory.mktemp("integrity")
    spec = write_policy(directory, "attacker", ATTACKER)
    results = run_tournament(small_config(), [spec, "random"], episodes=3, ticks=TICKS, workers=0, progress=False)
    save_results(results, directory / "out")
    return directory / "out", results, spec


def field(*keys: Any) -> str:
    """A regex for the error's field path, e.g. field("faults", spec, "timeout")."""
    return re.escape(keys[0] + "".join(f"[{key!r}]" for key in keys[1:]))


def attacker_row(results: dict, spec: str) -> int:
    return next(i for i, row in enumerate(results["leaderboard"]) if row["policy"] == spec)


def test_the_untouched_file_loads_and_a_forged_dict_is_not_saved(played, tmp_path):
    directory, results, spec = played
    assert load_results(directory) == results
    forged = json.loads((directory / "results.json").read_text())
    forged["leaderboard"][attacker_row(forged, spec)]["sr"] = 9999.0
    with pytest.raises(ValueError, match=r"leaderboard\[\d\]\['sr'\] is 9999.0"):
        save_results(forged, tmp_path)
    assert not (tmp_path / "results.json").exists()


# Each forgery edits a result in place and returns a regex of the error that must refuse it.
def leaderboard_sr(results: dict, spec: str) -> str:
    row = attacker_row(results, spec)
    results["leaderboard"][row]["sr"] = 9999
    return field("leaderboard", row, "sr") + " is 9999; replaying TrueSkill"


def sr_history_sr(results: dict, spec: str) -> str:
    results["sr_history"][-1]["sr"][spec] = 9999
    return field("sr_history", 2, "sr", spec) + " is 9999; replaying TrueSkill"


def rank_flipped(results: dict, spec: str) -> str:
    ranks = results["episodes"][1]["ranks"]
    ranks[spec] = 1 if ranks[spec] == 0 else 0
    return field("episodes", 1, "ranks", spec) + f" is {ranks[spec]}; ranking its scores gives"


def negative_count(results: dict, spec: str) -> str:
    results["episodes"][1]["faults"][spec]["dropped_actions"] = -6999992
    return field("episodes", 1, "faults", spec, "dropped_actions") + " is -6999992; counts are >= 0"


def giant_count(results: dict, spec: str) -> str:
    for record in (results["episodes"][0]["faults"][spec], results["faults"][spec]):
        record["timeout"] = int("9" * 4300)  # as many digits as Python still prints
    return field("episodes", 0, "faults", spec, "timeout") + r" is an int of 14285 bits; counts are below 2\*\*53"


def lifetime_above_ticks(results: dict, spec: str) -> str:
    results["episodes"][0]["metrics"][spec]["lifetime"]["mean"] = TICKS + 1.0
    return field("episodes", 0, "metrics", spec, "lifetime", "mean") + rf" is {TICKS + 1.0}; .* within \[0, {TICKS}\]"


def pooled_faults_not_summed(results: dict, spec: str) -> str:
    results["faults"][spec]["exception"] += 5
    return field("faults", spec, "exception") + " is 5; summing the episodes gives 0"


def score_raised(results: dict, spec: str) -> str:
    results["episodes"][0]["scores"][spec] = TICKS
    return field("episodes", 0, "scores", spec) + f" is {TICKS}; its mean lifetime"


@pytest.mark.parametrize("forge", [leaderboard_sr, sr_history_sr, rank_flipped, negative_count, giant_count,
                                   lifetime_above_ticks, pooled_faults_not_summed, score_raised])
def test_a_rewritten_result_is_refused_naming_the_field(played, tmp_path, forge):
    results = json.loads((played[0] / "results.json").read_text())
    message = forge(results, played[2])
    (tmp_path / "results.json").write_text(json.dumps(results, indent=1))
    with pytest.raises(ValueError, match=message) as caught:
        load_results(tmp_path)
    assert str(tmp_path / "results.json") in str(caught.value)


def test_an_int_json_cannot_even_parse_is_a_bad_file(played, tmp_path):
    text = (played[0] / "results.json").read_text()
    (tmp_path / "results.json").write_text(re.sub(r'"timeout": 0', '"timeout": ' + "9" * 5000, text, count=1))
    with pytest.raises(ValueError, match="is not a JSON results file"):
        load_results(tmp_path)
