"""Neural baseline (PyTorch policy, recurrent PPO). Arrives with the neural-baseline issue; nothing
is exported yet."""
