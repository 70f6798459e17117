"""Result files: JSON (everything, round-trips through `load_results`) and CSV tables beside it.

Files in the output directory, each written atomically (a temp file, then `os.replace`), so a
crash or a concurrent reader never sees half a file:

- ``results.json``: the whole result dict (schema: `validate_results`).
- tournament: ``leaderboard.csv`` (one row per policy), ``episodes.csv`` (one row per episode
  and policy: score, rank, SR after the episode, metric means, faults) and ``payoff.csv`` (row
  policy's share of the episodes in which it ranked above the column policy).
- team configs, both modes: ``teams.csv`` (team aggregates per policy).
- eval: ``metrics.csv`` (one row per policy and metric) and ``episodes.csv``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evaluation.metrics import METRICS
from evaluation.submission import FAULT_KINDS
from evaluation.tournament import FORMAT, FORMAT_VERSION
from nmmo.config import Config
from nmmo.files import atomic_write_bytes, remove_stale_temps

RESULTS_FILE = "results.json"
_COMMON = {"format": str, "version": int, "mode": str, "created": str, "config": dict, "settings": dict,
           "policies": list, "seeds": list, "map_seeds": list, "versions": dict, "episodes": list, "metrics": dict,
           "faults": dict}
_TOURNAMENT = {"sr_history": list, "leaderboard": list}
_SETTINGS = {"eval": ("ticks", "episodes", "seed", "time_budget"),
             "tournament": ("ticks", "episodes", "seed", "time_budget", "metric", "tie_break", "anchor", "population",
                            "beta")}
_LEADERBOARD_ROW = ("rank", "policy", "sr", "ci_low", "ci_high", "mu", "sigma", "metrics", "faults")


# ------------------------------------------------------------------- save
def save_results(results: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Validate, then write the CSV tables and, last, results.json into `out_dir`; return {name: path}.

    results.json is the manifest of the set: it lists each CSV with its SHA-256, and it is written
    after them, so a save interrupted half-way leaves the previous results.json, and `load_results`
    notices CSVs that do not belong to it. Stale temporary files of an earlier kill are removed."""
    validate_results(results)
    out = Path(out_dir)
    remove_stale_temps(out)
    tables = _tournament_tables(results) if results["mode"] == "tournament" else _eval_tables(results)
    if "team_metrics" in results:  # team configs: one row per policy and team metric
        tables["teams"] = [{"policy": p, "metric": m, **cell} for p, row in results["team_metrics"].items()
                           for m, cell in row.items()]
    paths, digests = {}, {}
    for name, rows in tables.items():
        data = _csv_bytes(rows)
        paths[name] = atomic_write_bytes(out / f"{name}.csv", data)
        digests[paths[name].name] = hashlib.sha256(data).hexdigest()
    text = json.dumps({**results, "files": digests}, indent=1, allow_nan=False)
    paths["json"] = atomic_write_bytes(out / RESULTS_FILE, text.encode())
    return {"json": paths.pop("json"), **paths}


def _csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


def _fault_columns(record: Mapping[str, Any]) -> dict[str, int]:
    return {kind: record[kind] for kind in FAULT_KINDS}


def _tournament_tables(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    board = [{**{k: row[k] for k in _LEADERBOARD_ROW[:7]}, "failed": row.get("failed", False), **row["metrics"],
              **row["faults"]} for row in results["leaderboard"]]
    episodes = [
        {"episode": e["index"], "seed": e["seed"], "map_seed": e["map_seed"], "policy": p, "score": e["scores"][p],
         "tie_break": e.get("tie_break", {}).get(p), "rank": e["ranks"][p], "sr": e["sr"][p],
         **{m: e["metrics"][p][m]["mean"] for m in METRICS}, "lifetimes": e["metrics"][p][METRICS[0]]["count"],
         **_fault_columns(e["faults"][p])}
        for e in results["episodes"] for p in results["policies"]
    ]
    tables = {"leaderboard": board, "episodes": episodes}
    if "payoff" in results:  # row policy's share of episodes ranked above the column policy
        tables["payoff"] = [{"policy": a, **{b: results["payoff"][a].get(b) for b in results["policies"]}}
                            for a in results["policies"]]
    return tables


def _eval_tables(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    metrics = [{"policy": p, "metric": m, **results["metrics"][p][m]} for p in results["policies"] for m in METRICS]
    episodes = [
        {"episode": e["index"], "seed": e["seed"], "map_seed": e["map_seed"], "policy": p,
         **{m: e["metrics"][p][m]["mean"] for m in METRICS}, "lifetimes": e["metrics"][p][METRICS[0]]["count"],
         **_fault_columns(e["faults"][p])}
        for e in results["episodes"] for p in results["policies"]
    ]
    return {"metrics": metrics, "episodes": episodes}


# ------------------------------------------------------------------- load
def load_results(path: str | Path) -> dict[str, Any]:
    """Read a results.json (or the directory holding one) and check it against the schema."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"no results file at {str(path)!r}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{str(path)!r} is not a JSON results file: {err}") from None
    try:
        validate_results(results)
    except ValueError as err:
        raise ValueError(f"{str(path)!r}: {err}") from None
    for name, digest in results.pop("files", {}).items():  # the set's manifest, checked, then dropped
        table = path.parent / name
        if table.is_file() and hashlib.sha256(table.read_bytes()).hexdigest() != digest:
            raise ValueError(f"{str(table)!r} does not belong to {str(path)!r} (a save interrupted half-way?); "
                             "results.json is the complete record")
    return results


def results_config(results: Mapping[str, Any]) -> Config:
    """The exact config a result was produced with (rebuilt from its TOML)."""
    from nmmo.config import from_toml

    return from_toml(results["config"]["toml"], results["config"]["name"])


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _check_keys(where: str, data: Any, spec: Mapping[str, type]) -> None:
    """`data` is a dict holding each key of `spec` with a value of that type."""
    _require(isinstance(data, dict), f"{where} must be an object")
    for key, kind in spec.items():
        _require(key in data, f"{where} lacks {key!r}")
        _require(isinstance(data[key], kind), f"{where}[{key!r}] must be {kind.__name__}, "
                                              f"got {type(data[key]).__name__}")


def _is_number(value: Any, allow_none: bool = False) -> bool:
    if value is None:
        return allow_none
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_metric_table(where: str, table: Any, policies: list[str]) -> None:
    """{policy: {metric: {mean, std, count}}} with every policy and metric present."""
    _require(isinstance(table, dict) and sorted(table) == sorted(policies), f"{where} must have one entry per policy")
    for policy in policies:
        for metric in METRICS:
            cell = table[policy].get(metric) if isinstance(table[policy], dict) else None
            _check_keys(f"{where}[{policy!r}][{metric!r}]", cell, {"count": int})
            _require(all(_is_number(cell.get(k), allow_none=cell["count"] == 0) for k in ("mean", "std")),
                     f"{where}[{policy!r}][{metric!r}] needs numeric mean and std")


def _check_policy_numbers(where: str, values: Any, policies: list[str], allow_none: bool = False) -> None:
    _require(isinstance(values, dict) and sorted(values) == sorted(policies), f"{where} must have one entry per policy")
    _require(all(_is_number(values[p], allow_none) for p in policies), f"{where} must hold numbers")


def validate_results(results: Any) -> None:
    """Raise ValueError naming the first part of `results` that does not match the schema."""
    _check_keys("results", results, _COMMON)
    _require(results["format"] == FORMAT, f"format is {results['format']!r}, expected {FORMAT!r}")
    _require(results["version"] == FORMAT_VERSION, f"format version {results['version']} is not {FORMAT_VERSION}")
    mode = results["mode"]
    _require(mode in _SETTINGS, f"mode must be 'eval' or 'tournament', got {mode!r}")
    if mode == "tournament":
        _check_keys("results", results, _TOURNAMENT)
    _check_keys("results['config']", results["config"], {"name": str, "toml": str})
    settings = results["settings"]
    for key in _SETTINGS[mode]:
        _require(key in settings, f"settings lack {key!r}")
    policies = results["policies"]
    _require(bool(policies) and all(isinstance(p, str) for p in policies) and len(set(policies)) == len(policies),
             "policies must be a non-empty list of distinct spec strings")
    n = settings["episodes"]
    _require(isinstance(n, int) and n >= 1, "settings['episodes'] must be a positive int")
    for key in ("seeds", "map_seeds", "episodes") + (("sr_history",) if mode == "tournament" else ()):
        _require(len(results[key]) == n, f"{key} must have {n} entries (settings['episodes'])")
    _require(all(isinstance(s, int) for s in results["seeds"] + results["map_seeds"]), "seeds must be ints")
    for i, episode in enumerate(results["episodes"]):
        where = f"episodes[{i}]"
        _check_keys(where, episode, {"index": int, "seed": int, "map_seed": int, "ticks": int, "faults": dict})
        _require(episode["index"] == i, f"{where} has index {episode['index']}; episodes must be in order")
        _require(episode["seed"] == results["seeds"][i] and episode["map_seed"] == results["map_seeds"][i],
                 f"{where} seeds disagree with the top-level seeds")
        _check_metric_table(f"{where}['metrics']", episode.get("metrics"), policies)
        _require(sorted(episode["faults"]) == sorted(policies), f"{where}['faults'] must have one entry per policy")
        if mode == "tournament":
            _check_policy_numbers(f"{where}['scores']", episode.get("scores"), policies, allow_none=True)
            _check_policy_numbers(f"{where}['ranks']", episode.get("ranks"), policies, allow_none=True)
            _check_policy_numbers(f"{where}['sr']", episode.get("sr"), policies)
    _check_metric_table("metrics", results["metrics"], policies)
    _require(sorted(results["faults"]) == sorted(policies), "faults must have one entry per policy")
    for policy, record in results["faults"].items():
        _check_keys(f"faults[{policy!r}]", record, {kind: int for kind in FAULT_KINDS})
    try:
        results_config(results)
    except ValueError as err:
        raise ValueError(f"config TOML does not load: {err}") from None
    if mode == "tournament":
        _validate_tournament(results, policies)


def _validate_tournament(results: dict[str, Any], policies: list[str]) -> None:
    _require(results["settings"]["anchor"] in policies, "the SR anchor is not among the policies")
    for i, entry in enumerate(results["sr_history"]):
        _check_keys(f"sr_history[{i}]", entry, {"episode": int, "sr": dict, "mu": dict, "sigma": dict})
        for key in ("sr", "mu", "sigma"):
            _check_policy_numbers(f"sr_history[{i}][{key!r}]", entry[key], policies)
    if "payoff" in results:
        payoff = results["payoff"]
        _require(isinstance(payoff, dict) and sorted(payoff) == sorted(policies),
                 "payoff must have one row per policy")
        for policy, row in payoff.items():
            _check_policy_numbers(f"payoff[{policy!r}]", {policy: 0, **row}, policies, allow_none=True)
    board = results["leaderboard"]
    _require(sorted(row.get("policy") for row in board if isinstance(row, dict)) == sorted(policies),
             "leaderboard must have one row per policy")
    for i, row in enumerate(board):
        for key in _LEADERBOARD_ROW:
            _require(key in row, f"leaderboard[{i}] lacks {key!r}")
        _require(all(_is_number(row[k]) for k in ("sr", "ci_low", "ci_high", "mu", "sigma")),
                 f"leaderboard[{i}] must hold numbers")
