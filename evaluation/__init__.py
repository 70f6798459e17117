"""Evaluation: per-policy metrics, self-contained runs, and TrueSkill tournaments on held-out maps.

- `evaluate(config, policy, ...)`: one policy controls every agent; its metric table.
- `run_tournament(config, policies, ...)`: policies share one world; SR anchored on Scripted Combat.
- `save_results` / `load_results`: JSON + CSV result files that round-trip and say how to reproduce.
- `evaluation.arena`: an always-on tournament over a database (``nmmo arena serve``; docs/arena.md).

Submissions (``file.py:Class``, ``pkg.module:Class``) run in worker processes with a per-tick
time budget, in the sandbox (`evaluation.sandbox`); see `evaluation.submission` and docs/evaluation.md.
"""

from evaluation.metrics import LABELS, METRICS, aggregate, aggregate_by_policy
from evaluation.rating import ANCHOR, Ratings, ranks_from_scores, skill_rating, sr_scale
from evaluation.results import load_results, save_results, validate_results
from evaluation.tournament import evaluate, run_tournament

__all__ = [
    "ANCHOR",
    "LABELS",
    "METRICS",
    "Ratings",
    "aggregate",
    "aggregate_by_policy",
    "evaluate",
    "load_results",
    "ranks_from_scores",
    "run_tournament",
    "save_results",
    "skill_rating",
    "sr_scale",
    "validate_results",
]
