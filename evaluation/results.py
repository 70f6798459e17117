"""Result files: JSON (everything, round-trips through `load_results`) and CSV tables beside it.

Files in the output directory, each written atomically (a temp file, then `os.replace`), so a
crash or a concurrent reader never sees half a file:

- ``results.json``: the whole result dict (schema: `validate_results`).
- tournament: ``leaderboard.csv`` (one row per policy), ``episodes.csv`` (one row per episode
  and policy: score, rank, SR after the episode, metric means, faults) and ``payoff.csv`` (row
  policy's share of the episodes in which it ranked above the column policy).
- team configs, both modes: ``teams.csv`` (team aggregates per policy).
- eval: ``metrics.csv`` (one row per policy and metric) and ``episodes.csv``.

A result verifies itself: `validate_results` (on save and load) recomputes every derived field from
the per-episode records (pooled metrics and faults, each episode's ranks from its scores, the SR
after each episode, sr_history, payoff and leaderboard by replaying TrueSkill) and bounds every
count and mean, so a hand-edited SR or count is refused with the field named. It cannot tell a
forger who rewrites the episodes consistently: the owner's exact re-run (recorded seed and secret)
is that check.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import io
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluation.faults import FAULT_KINDS, MAX_MESSAGES, Faults
from evaluation.metrics import METRICS, RANKING_METRICS, TEAM_METRICS, present_metrics
from evaluation.rating import Ratings, all_way_ties, episode_ranks, history_entry, payoff_table
from evaluation.tournament import FORMAT, FORMAT_VERSION, leaderboard
from nmmo.config import Config
from nmmo.io.files import atomic_write_bytes, remove_stale_temps

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


def _names(results: dict[str, Any]) -> list[str]:
    """The metrics of a result (`present_metrics` of its first policy's row)."""
    return present_metrics(next(iter(results["metrics"].values())))


def _tournament_tables(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    board = [{**{k: row[k] for k in _LEADERBOARD_ROW[:7]}, "failed": row.get("failed", False), **row["metrics"],
              **row["faults"]} for row in results["leaderboard"]]
    episodes = [
        {"episode": e["index"], "seed": e["seed"], "map_seed": e["map_seed"], "policy": p, "score": e["scores"][p],
         "tie_break": e.get("tie_break", {}).get(p), "rank": e["ranks"][p], "sr": e["sr"][p],
         **{m: e["metrics"][p][m]["mean"] for m in _names(results)}, "lifetimes": e["metrics"][p][METRICS[0]]["count"],
         **_fault_columns(e["faults"][p])}
        for e in results["episodes"] for p in results["policies"]
    ]
    tables = {"leaderboard": board, "episodes": episodes}
    if "payoff" in results:  # row policy's share of episodes ranked above the column policy
        tables["payoff"] = [{"policy": a, **{b: results["payoff"][a].get(b) for b in results["policies"]}}
                            for a in results["policies"]]
    return tables


def _eval_tables(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    metrics = [{"policy": p, "metric": m, **results["metrics"][p][m]} for p in results["policies"]
               for m in _names(results)]
    episodes = [
        {"episode": e["index"], "seed": e["seed"], "map_seed": e["map_seed"], "policy": p,
         **{m: e["metrics"][p][m]["mean"] for m in _names(results)}, "lifetimes": e["metrics"][p][METRICS[0]]["count"],
         **_fault_columns(e["faults"][p])}
        for e in results["episodes"] for p in results["policies"]
    ]
    return {"metrics": metrics, "episodes": episodes}


# ------------------------------------------------------------------- load
def load_results(path: str | Path) -> dict[str, Any]:
    """Read a results.json (or the directory holding one) and check it (`validate_results`): its
    schema, ranges, and every derived field (pooled tables, ranks, ratings) against its episodes."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"no results file at {str(path)!r}") from None
    except (ValueError, RecursionError) as err:  # bad JSON or UTF-8, an int past 4300 digits, deep nesting
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


# --------------------------------------------------------------- validate
#: Bound on every count (and on the size of any number) a result may hold: 2**53, below which every
#: int is exact as a JSON number in any reader. Values are compared with it, never printed, so one of
#: thousands of digits is refused at no cost.
MAX_COUNT = 2**53
#: Tolerances of recomputed values. JSON round-trips floats exactly, so a genuine file matches to the
#: last bit; the margin only absorbs another platform's floating point (libm, summation order).
REL_TOL, ABS_TOL = 1e-6, 1e-9
#: The fault counts every record holds since format version 2; a newer `Faults` field may be present.
FAULT_COUNTS = ("exception", "timeout", "malformed", "dropped_actions", "restarts", "disabled", "not_started")
_FAULT_FIELDS = frozenset(f.name for f in dataclasses.fields(Faults))
_LIFETIME_METRICS = ("lifetime", "team_lifetime")  # means within [0, ticks]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _at(where: str, *keys: Any) -> str:
    """The path of a field, e.g. ``episodes[3]['faults']['x.py:P']``. Hot loops build it only on failure."""
    return where + "".join(f"[{key!r}]" for key in keys)


def _show(value: Any) -> str:
    """A stored value for an error message: a huge int by its size (int -> str is capped at 4300
    digits and quadratic below), anything else as a short repr."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(where: str, value: Any, reason: str) -> ValueError:
    return ValueError(f"{where} is {_show(value)}; {reason}")


def _check_keys(where: str, data: Any, spec: Mapping[str, type]) -> None:
    """`data` is a dict holding each key of `spec` with a value of that type."""
    _require(isinstance(data, dict), f"{where} must be an object")
    for key, kind in spec.items():
        _require(key in data, f"{where} lacks {key!r}")
        _require(isinstance(data[key], kind), f"{where}[{key!r}] must be {kind.__name__}, "
                                              f"got {type(data[key]).__name__}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any, allow_none: bool = False) -> bool:
    """An int or float within +-2**53 (finite; no real SR, mean or count is larger, and within it
    sums and squares cannot overflow); a bool is not a number."""
    if value is None:
        return allow_none
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -MAX_COUNT < value < MAX_COUNT


def _close(stored: float, expected: float) -> bool:
    return math.isclose(stored, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _count_problem(value: Any) -> str | None:
    """Why `value` is not a count (an int in [0, MAX_COUNT)); None when it is one."""
    if not _is_int(value):
        return "counts are ints"
    if value < 0:
        return "counts are >= 0"
    return "counts are below 2**53" if value >= MAX_COUNT else None


def _check_count(where: str, value: Any) -> None:
    problem = _count_problem(value)
    if problem is not None:
        raise _fail(where, value, problem)


def _check_faults(where: str, record: Any) -> None:
    """One fault record: every count of `FAULT_COUNTS`, no field `Faults` lacks, a few messages."""
    _require(isinstance(record, dict), f"{where} must be an object")
    for key in FAULT_COUNTS:
        if key not in record:
            raise ValueError(f"{where} lacks {key!r}")
    for key, value in record.items():
        if key not in _FAULT_FIELDS:
            raise ValueError(f"{where} has an unknown field {_show(key)}")
        problem = None if key == "messages" else _count_problem(value)
        if problem is not None:
            raise _fail(_at(where, key), value, problem)
    messages = record.get("messages", [])
    if not (isinstance(messages, list) and len(messages) <= MAX_MESSAGES and all(isinstance(m, str) for m in messages)):
        raise ValueError(f"{where}['messages'] must be a list of at most {MAX_MESSAGES} strings")


def _check_fault_table(where: str, table: Any, policies: list[str]) -> None:
    """{policy: fault record}, one per policy."""
    _require(isinstance(table, dict) and sorted(table) == sorted(policies), f"{where} must have one entry per policy")
    for policy in policies:
        _check_faults(_at(where, policy), table[policy])


def _cell_problem(cell: Any, ceiling: float | None, signed: bool = False) -> tuple[tuple[str, ...], Any, str] | None:
    """What is wrong with a {mean, std, count} cell, as (keys below the cell, value, reason); None
    when nothing is: a count, then (null when it is 0) a finite mean >= 0 (any sign when `signed`:
    a task's reward may be negative), <= `ceiling`, std >= 0."""
    if not isinstance(cell, dict) or "count" not in cell:
        return (), cell, "an object with mean, std and count is expected"
    count, mean, std = cell["count"], cell.get("mean"), cell.get("std")
    problem = _count_problem(count)
    if problem is not None:
        return ("count",), count, problem
    if count == 0:
        return None if mean is None and std is None else (("mean",), mean, "null, as the count is 0")
    for key, value in (("mean", mean), ("std", std)):
        if not _is_number(value):
            return (key,), value, "a number within +-2**53 is expected"
    if std < 0:
        return ("std",), std, "a std is >= 0"
    if mean < 0 and not signed:
        return ("mean",), mean, "metrics are >= 0"
    if ceiling is not None and mean > ceiling:
        return ("mean",), mean, f"a lifetime is within [0, {ceiling}], the ticks played"
    return None


def _check_metric_table(where: str, table: Any, policies: list[str], ticks: int,
                        names: tuple[str, ...] = METRICS) -> None:
    """{policy: {metric: {mean, std, count}}} with every policy and metric present and in range."""
    _require(isinstance(table, dict) and sorted(table) == sorted(policies), f"{where} must have one entry per policy")
    for policy in policies:
        row = table[policy]
        _require(isinstance(row, dict), f"{_at(where, policy)} must be an object")
        for name in present_metrics(table[policies[0]]) if names == METRICS else names:
            problem = _cell_problem(row.get(name), ticks if name in _LIFETIME_METRICS else None, name == "task_reward")
            if problem is not None:
                keys, value, reason = problem
                raise _fail(_at(where, policy, name, *keys), value, reason)


def _check_policy_numbers(where: str, values: Any, policies: list[str], allow_none: bool = False) -> None:
    """{policy: finite number (or null with `allow_none`)}, one per policy."""
    _require(isinstance(values, dict) and sorted(values) == sorted(policies), f"{where} must have one entry per policy")
    for policy in policies:
        if not _is_number(values[policy], allow_none):
            expected = "a number within +-2**53" + (" or null" if allow_none else "")
            raise _fail(_at(where, policy), values[policy], f"{expected} is expected")


def _check_settings(settings: dict[str, Any], mode: str) -> None:
    """The settings the checks below rely on: episodes, ticks, and a tournament's metrics and beta."""
    for key in _SETTINGS[mode]:
        _require(key in settings, f"settings lack {key!r}")
    for key in ("ticks", "episodes"):
        _require(_is_int(settings[key]) and 1 <= settings[key] < MAX_COUNT,
                 f"settings[{key!r}] is {_show(settings[key])}; a positive int is expected")
    if mode == "tournament":
        _require(settings["metric"] in RANKING_METRICS,
                 f"settings['metric'] is {_show(settings['metric'])}; not a metric")
        _require(settings["tie_break"] is None or settings["tie_break"] in RANKING_METRICS,
                 f"settings['tie_break'] is {_show(settings['tie_break'])}; not a metric")
        _require(_is_number(settings["beta"]) and settings["beta"] > 0,
                 f"settings['beta'] is {_show(settings['beta'])}; a positive number is expected")


def _check_episode(i: int, episode: Any, results: dict[str, Any]) -> None:
    """Shape and ranges of one episode entry (what needs no other episode)."""
    where, policies, ticks = f"episodes[{i}]", results["policies"], results["settings"]["ticks"]
    _check_keys(where, episode, {"index": int, "seed": int, "map_seed": int, "ticks": int, "faults": dict})
    _require(episode["index"] == i, f"{where} has index {_show(episode['index'])}; episodes must be in order")
    _require(episode["seed"] == results["seeds"][i] and episode["map_seed"] == results["map_seeds"][i],
             f"{where} seeds disagree with the top-level seeds")
    _require(0 <= episode["ticks"] <= ticks, f"{where}['ticks'] is {_show(episode['ticks'])}; "
                                             f"an episode lasts 0 to settings['ticks'] = {ticks} ticks")
    if "engine_errors" in episode:
        _check_count(f"{where}['engine_errors']", episode["engine_errors"])
    _check_metric_table(f"{where}['metrics']", episode.get("metrics"), policies, episode["ticks"])
    _check_fault_table(f"{where}['faults']", episode["faults"], policies)
    if results["mode"] == "tournament":
        _check_policy_numbers(f"{where}['scores']", episode.get("scores"), policies, allow_none=True)
        _check_policy_numbers(f"{where}['sr']", episode.get("sr"), policies)
        ranks = episode.get("ranks")
        _require(isinstance(ranks, dict) and sorted(ranks) == sorted(policies),
                 f"{where}['ranks'] must have one entry per policy")
        for policy in policies:
            rank = ranks[policy]
            if not (rank is None or _is_int(rank) and 0 <= rank < len(policies)):
                raise _fail(_at(where, "ranks", policy), rank, f"ranks are null or ints in [0, {len(policies)})")


def validate_results(results: Any) -> None:
    """Raise ValueError naming the first field of `results` that does not match the schema, is out
    of range, or differs from what the episodes give: pooled metrics and faults, and in a tournament
    the ranks, the TrueSkill ratings replayed from them, the payoff table and the leaderboard."""
    _check_keys("results", results, _COMMON)
    _require(results["format"] == FORMAT, f"format is {_show(results['format'])}, expected {FORMAT!r}")
    _require(results["version"] == FORMAT_VERSION,
             f"format version {_show(results['version'])} is not {FORMAT_VERSION}")
    mode = results["mode"]
    _require(mode in _SETTINGS, f"mode must be 'eval' or 'tournament', got {_show(mode)}")
    if mode == "tournament":
        _check_keys("results", results, _TOURNAMENT)
    _check_keys("results['config']", results["config"], {"name": str, "toml": str})
    settings = results["settings"]
    _check_settings(settings, mode)
    policies = results["policies"]
    _require(bool(policies) and all(isinstance(p, str) for p in policies) and len(set(policies)) == len(policies),
             "policies must be a non-empty list of distinct spec strings")
    n = settings["episodes"]
    for key in ("seeds", "map_seeds", "episodes") + (("sr_history",) if mode == "tournament" else ()):
        _require(len(results[key]) == n, f"{key} must have {n} entries (settings['episodes'])")
    _require(all(_is_int(s) for s in results["seeds"] + results["map_seeds"]), "seeds must be ints")
    for i, episode in enumerate(results["episodes"]):
        _check_episode(i, episode, results)
    _check_metric_table("metrics", results["metrics"], policies, settings["ticks"])
    _check_fault_table("faults", results["faults"], policies)
    if "team_metrics" in results:
        _check_metric_table("team_metrics", results["team_metrics"], policies, settings["ticks"], TEAM_METRICS)
    try:
        results_config(results)
    except ValueError as err:
        raise ValueError(f"config TOML does not load: {err}") from None
    _check_pooled_metrics(results, policies)
    _check_pooled_faults(results, policies)
    if mode == "tournament":
        _validate_tournament(results, policies)


# ------------------------------------------------------ recomputed fields
def _match(where: str, stored: Any, expected: Any, source: str, keys: tuple[Any, ...] = ()) -> None:
    """`stored` (at `where` and `keys` below it) is `expected`, what `source` gives: floats within
    REL_TOL, anything else exactly; a dict may lack a key (a newer version's), never add one."""
    if isinstance(expected, dict):
        if not isinstance(stored, dict):
            raise ValueError(f"{_at(where, *keys)} must be an object")
        for key, value in stored.items():
            if key not in expected:
                raise ValueError(f"{_at(where, *keys)} has {_show(key)}, which no result holds")
            _match(where, value, expected[key], source, (*keys, key))
        return
    if isinstance(expected, list):
        if not (isinstance(stored, list) and len(stored) == len(expected)):
            raise ValueError(f"{_at(where, *keys)} must have {len(expected)} entries, as {source} gives")
        for i, (value, wanted) in enumerate(zip(stored, expected, strict=True)):
            _match(where, value, wanted, source, (*keys, i))
        return
    if isinstance(expected, float):
        same = _is_number(stored) and _close(stored, expected)
    else:  # ints, bools, strings and None exactly, of the same type
        same = type(stored) is type(expected) and stored == expected
    if not same:
        raise _fail(_at(where, *keys), stored, f"{source} gives {_show(expected)}")


def _pooled_moments(cells: list[Mapping[str, Any]]) -> tuple[int, float, float]:
    """Count, mean and mean square over every lifetime of several {mean, std, count} cells."""
    count = sum(cell["count"] for cell in cells)
    if count == 0:
        return 0, 0.0, 0.0
    total = sum(cell["count"] * cell["mean"] for cell in cells if cell["count"])
    squares = sum(cell["count"] * (cell["std"] * cell["std"] + cell["mean"] * cell["mean"])
                  for cell in cells if cell["count"])
    return count, total / count, squares / count


def _check_pooled_metrics(results: dict[str, Any], policies: list[str]) -> None:
    """The pooled metric table is the count-weighted pooling of the episodes' tables."""
    for policy in policies:
        for name in METRICS:
            cell = results["metrics"][policy][name]
            count, mean, square = _pooled_moments([e["metrics"][policy][name] for e in results["episodes"]])
            if cell["count"] != count:
                raise _fail(_at("metrics", policy, name, "count"), cell["count"],
                            f"the episodes' counts sum to {count}")
            if count == 0:
                continue
            if not _close(cell["mean"], mean):
                raise _fail(_at("metrics", policy, name, "mean"), cell["mean"], f"pooling the episodes gives {mean!r}")
            variance = square - mean * mean
            if abs(cell["std"] * cell["std"] - variance) > REL_TOL * square + ABS_TOL:
                raise _fail(_at("metrics", policy, name, "std"), cell["std"],
                            f"pooling the episodes gives {math.sqrt(max(variance, 0.0))!r}")


def _check_pooled_faults(results: dict[str, Any], policies: list[str]) -> None:
    """Pooled fault records are the sum of the episodes' (`Faults.merge`, as the tournament pools them)."""
    for policy in policies:
        records = [Faults.from_dict(e["faults"][policy]) for e in results["episodes"]]
        total = functools.reduce(Faults.merge, records, Faults())
        _match("faults", results["faults"][policy], total.to_dict(), "summing the episodes", (policy,))


def replay_ratings(policies: list[str], rankings: Iterable[Sequence[int | None]], anchor: str,
                   beta: float) -> Iterator[Ratings]:
    """TrueSkill over `rankings` in episode order, as `Standings` rates: the ratings after each."""
    ratings = Ratings(policies, anchor, beta)
    for ranks in rankings:
        ratings.update(ranks)
        yield ratings


def _check_scores(i: int, episode: dict[str, Any], results: dict[str, Any], key: str, metric: str) -> list:
    """Episode `i`'s `key` ('scores' or 'tie_break') per policy is its mean `metric` (null where the
    policy never started or had no lifetime); returns them in policy order."""
    where, values = f"episodes[{i}]", episode.get(key)
    _check_policy_numbers(_at(where, key), values, results["policies"], allow_none=True)
    for policy in results["policies"]:
        _require(metric in episode["metrics"][policy], f"{where}['metrics'] has no {metric!r}, the ranking metric")
        cell, value = episode["metrics"][policy][metric], values[policy]
        if episode["faults"][policy]["not_started"] or cell["count"] == 0:
            if value is not None:
                raise _fail(_at(where, key, policy), value, "the policy has no lifetime in this episode, so no score")
        elif value is None or not _close(value, cell["mean"]):
            raise _fail(_at(where, key, policy), value,
                        f"its mean {metric}, {_at(where, 'metrics', policy, metric, 'mean')}, is {cell['mean']!r}")
    return [values[p] for p in results["policies"]]


def _check_ranks(i: int, episode: dict[str, Any], results: dict[str, Any]) -> list[int | None]:
    """Episode `i`'s ranks follow from its scores (and tie-breaks); returns them in policy order."""
    settings, policies = results["settings"], results["policies"]
    scores = _check_scores(i, episode, results, "scores", settings["metric"])
    ties = None
    if settings["tie_break"] is None:
        _require("tie_break" not in episode, f"episodes[{i}] has 'tie_break', but settings['tie_break'] is null")
    else:
        ties = _check_scores(i, episode, results, "tie_break", settings["tie_break"])
    ranks = dict(zip(policies, episode_ranks(scores, ties), strict=True))
    _match(f"episodes[{i}]", episode["ranks"], ranks, "ranking its scores", ("ranks",))
    return [episode["ranks"][p] for p in policies]


def _check_shapes(results: dict[str, Any], policies: list[str]) -> None:
    """sr_history, payoff and leaderboard hold what the recomputation compares them with."""
    _require(results["settings"]["anchor"] in policies, "the SR anchor is not among the policies")
    for i, entry in enumerate(results["sr_history"]):
        _check_keys(f"sr_history[{i}]", entry, {"episode": int, "sr": dict, "mu": dict, "sigma": dict})
        for key in ("sr", "mu", "sigma"):
            _check_policy_numbers(f"sr_history[{i}][{key!r}]", entry[key], policies)
    if "payoff" in results:
        payoff = results["payoff"]
        _require(isinstance(payoff, dict) and sorted(payoff) == sorted(policies), "payoff must have one row per policy")
        for policy, row in payoff.items():
            _check_policy_numbers(f"payoff[{policy!r}]", {policy: 0, **row} if isinstance(row, dict) else row,
                                  policies, allow_none=True)
    board = results["leaderboard"]
    _require(sorted(row.get("policy") for row in board if isinstance(row, dict)) == sorted(policies),
             "leaderboard must have one row per policy")
    for i, row in enumerate(board):
        for key in _LEADERBOARD_ROW:
            _require(key in row, f"leaderboard[{i}] lacks {key!r}")


def _validate_tournament(results: dict[str, Any], policies: list[str]) -> None:
    """Ranks from scores; SR after each episode, sr_history, payoff, ties and leaderboard from the
    ranks (TrueSkill replayed in episode order with the recorded anchor and beta)."""
    _check_shapes(results, policies)
    settings, episodes = results["settings"], results["episodes"]
    rankings = [_check_ranks(i, episode, results) for i, episode in enumerate(episodes)]
    replay, ratings = "replaying TrueSkill over the episodes' ranks", None
    for i, ratings in enumerate(replay_ratings(policies, rankings, settings["anchor"], settings["beta"])):
        entry = history_entry(i, ratings.table())
        _match("episodes", episodes[i]["sr"], entry["sr"], replay, (i, "sr"))
        _match("sr_history", results["sr_history"][i], entry, replay, (i,))
    if "payoff" in results:
        _match("payoff", results["payoff"], payoff_table(policies, rankings), "counting the episodes' ranks")
    if "all_way_ties" in results:
        _match("all_way_ties", results["all_way_ties"], all_way_ties(rankings), "counting the episodes' ranks")
    faults = {p: Faults.from_dict(results["faults"][p]) for p in policies}
    board = leaderboard(ratings, results["metrics"], faults, settings["episodes"])
    _match("leaderboard", results["leaderboard"], board, replay)
