"""The paper's three learning experiments, and task generalization, as commands (`nmmo experiment NAME`).

Each trains the PPO baseline (`baselines.ppo.train`, the shipped recipe of ``--preset small`` and
its survival reward) under every condition with the same budget of agent-steps, evaluates the
checkpoints the way the paper did, and writes a results JSON, rich tables and PNG plots:

- `population` (Fig. 5 and Table 4): population caps 4 / 32 / 256 with Resource and Progression
  only and continuous spawning; exploration and lifetime at each run's training cap and at one
  common test cap, with intervals over seeds, and where each cap's agents went (visit heatmaps).
- `maps` (Table 2 and Fig. 6): pools of 1 / 32 / 256 / 16384 training maps with every system on;
  lifetime on the training maps each run actually saw against held-out maps, and how many maps
  that was.
- `progression` (Fig. 4): small maps with every system on; the metric curves over training and the
  order in which the skills rise.
- `tasks` (not in the paper): a task-conditioned agent against a task-blind one, trained on the
  same tasks; their completion of held-out tasks, with intervals over seeds.

What they share, one module each: `run` (a run, its budget, training it, and the loop over every
run with ``--resume``), `evaluate` (the self-contained evaluation of a checkpoint), `stats`
(intervals over episodes and seeds, smoothed curves), `results` (the results file) and `report`
(table cells and figure helpers). Nothing here imports torch until a run starts, so building the
`nmmo` command stays cheap.
"""

from __future__ import annotations

#: The experiments, in the order the docs present them.
EXPERIMENTS = ("population", "maps", "progression", "tasks")
