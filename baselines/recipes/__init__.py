"""Training recipes for the trainers researchers already use, one runnable file per trainer
(CleanRL-style): ``python -m baselines.recipes.sb3``, ``.torchrl``, ``.rllib``, ``.pufferlib``
(docs: "Use your own trainer").

Each recipe trains on an env form of `nmmo.integrations` and saves what that package's loaders
read back (``sb3:PATH``, ``torchrl:PATH``, ``pufferlib:PATH``; RLlib's checkpoint through
``python -m nmmo.integrations.rllib export``). `common` holds what the hand-written loops share:
one settings type and one GAE. Nothing here is imported by the engine, and this package imports
a trainer library only when its recipe is imported."""
