"""The simulation as environments: `env` (`nmmo.Env`, the PettingZoo ParallelEnv and its batched
array API, with `outcomes`, `spaces`, `global_state`, `overlays` and `landscape`), and its vector
forms: `vector` (`nmmo.VectorEnv`) over `blocks` of envs writing into shared `buffers`, the
`fused` engine (many worlds in one set of tables), `distributed` (Ray actors) and `process`
(child processes that die with their parent)."""
