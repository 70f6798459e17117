"""`nmmo experiment table1`: Table 1 with intervals, its orderings check, sensitivity runs and files."""

import json

import pytest

from evaluation.metrics import METRICS
from evaluation.table1 import orderings, run_table1, summarize
from nmmo.cli import main

TINY = """
preset = "Small"
systems = ["Resource", "Combat", "Progression", "NPC"]

[keys]
PLAYER_N = 8
NPC_N = 4
HORIZON = 16
"""


def episode(values: dict[str, float], count: int) -> dict:
    return {"metrics": {"bot": {m: {"mean": values.get(m, 0.0), "count": count, "std": 0.0} for m in METRICS}}}


def test_summary_pools_lifetimes_and_brackets_the_mean():
    result = {"episodes": [episode({"lifetime": 10.0}, 1), episode({"lifetime": 40.0}, 3)]}
    cell = summarize(result, "bot")["lifetime"]
    assert cell["mean"] == pytest.approx((10 + 3 * 40) / 4)  # over lifetimes, not over maps
    assert 10.0 <= cell["low"] <= cell["mean"] <= cell["high"] <= 40.0
    same = {"episodes": [episode({"lifetime": 7.0}, 2)] * 3}
    assert summarize(same, "bot")["lifetime"] == {"mean": 7.0, "low": 7.0, "high": 7.0}


def test_orderings_catch_a_table_that_lies():
    def bots(forage, combat, meander, kills=(0.5, 0.0)):
        out = {}
        for bot, value in (("scripted:Forage", forage), ("scripted:Combat", combat), ("scripted:Meander", meander)):
            out[bot] = {m: {"mean": value} for m in METRICS}
        out["scripted:Combat"]["player_kills"]["mean"], out["scripted:Forage"]["player_kills"]["mean"] = kills
        out["scripted:Combat"]["equipment"]["mean"], out["scripted:Forage"]["equipment"]["mean"] = kills
        return out

    good = {row["metric"]: row["holds"] for row in orderings(bots(3.0, 2.0, 1.0))}
    assert all(good.values()) and set(good) == {"lifetime", "achievement", "explore", "forage", "player_kills",
                                                "equipment"}
    bad = {row["metric"]: row["holds"] for row in orderings(bots(1.0, 2.0, 3.0, kills=(0.5, 0.1)))}
    assert not any(bad.values())  # Meander above Forage, and a Forage with kills


def test_table1_runs_end_to_end_and_resumes(tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY)
    out = tmp_path / "t1"
    seen = []
    kwargs = dict(bots=("scripted:Forage", "scripted:Meander"), maps=2, caps=(4,), forest=(0.6,), workers=0,
                  out=out, progress=False)
    results = run_table1(str(config), on_run=seen.append, **kwargs)
    assert seen == ["main:scripted:Forage:None", "main:scripted:Meander:None", "cap:scripted:Forage:4",
                    "forest:scripted:Forage:0.6"]
    saved = json.loads((out / "table1.json").read_text())
    assert saved["main"].keys() == {"scripted:Forage", "scripted:Meander"}
    assert len(saved["runs"]["cap:scripted:Forage:4"]["map_seeds"]) == 2
    forest = saved["runs"]["forest:scripted:Forage:0.6"]["forest_fraction"]
    assert forest > saved["materials"]["ours"]["forest"]  # a lower grass threshold means more forest
    assert (out / "table1.png").read_bytes()[:4] == b"\x89PNG"
    assert results["orderings"] and all("holds" in row for row in results["orderings"])
    again = []
    run_table1(str(config), on_run=again.append, resume=True, **kwargs)
    assert again == []  # every run was journaled
    with pytest.raises(ValueError, match="other settings"):
        run_table1(str(config), resume=True, **{**kwargs, "maps": 3})


def test_table1_command_prints_its_tables(tmp_path, capsys):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY)
    code = main(["experiment", "table1", "--config", str(config), "--bots", "scripted:Meander", "--maps", "1",
                 "--caps", "--forest", "--workers", "0", "--out", str(tmp_path / "t1")])
    text = capsys.readouterr().out
    assert code == 0
    for title in ("Table 1", "orderings", "Sensitivity", "Material fractions"):
        assert title in text
    assert max(len(line) for line in text.splitlines() if "┃" in line or "│" in line) <= 100
