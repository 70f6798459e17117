"""The neural baselines: recurrent PPO (`baselines.ppo`, the ``nmmo train`` command), its networks
(`baselines.model`), checkpoints played as policies (`ckpt:`, `baseline:`: `baselines.policy`), the
league, the teacher, the shipped weights (baselines/weights) and one training recipe per external
trainer (`baselines.recipes`)."""
