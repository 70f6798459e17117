"""The vector engines: many worlds stepped as one (`nmmo.VectorEnv`, `vector`), above `nmmo.envs`.

Modules: `vector` (`VectorEnv`, in this process, in worker processes or on Ray), `blocks` (a block of
worlds one process steps, and the "loop" engine: lone `nmmo.Env`s in turn), `fused` and
`fused_tasks` (the "fused" engine: a block's worlds in one set of tables), `buffers` (the contract
below), `distributed` (Ray actors) and `process` (children that die with their parent).

The contract, which every engine and backend keeps, is the buffers (`buffers.allocate_buffers`):

- **Rows.** Row ``k * PLAYER_N + s`` of every buffer is agent slot ``s`` of world ``k``. A block
  owns the rows of its worlds, ``start_row`` to ``start_row + len(seeds) * PLAYER_N``, and writes
  no other.
- **Buffers.** One per observation field of the layout (`nmmo.core.layout.layout`: its shape
  after the row, its dtype), then the step's fields (`buffers.STEP_FIELDS`: ``reward``,
  ``terminated``, ``truncated``, ``alive``, ``agent_id`` (0 in an empty slot), ``reset``; with tasks
  on, `buffers.TASK_FIELDS` too), then ``final_<field>`` for each observation field. They lie one
  after another, each 64-byte aligned, so worker processes and Ray actors share them as one block of
  memory.
- **A block** (`blocks.EnvBlock`, `fused.FusedBlock`) is built from (config, seeds, buffers,
  start_row, env class); ``reset()`` writes every buffer of its rows; ``step(actions)`` takes its
  rows' (rows, 3) actions as `nmmo.Env.step_arrays` does, writes every buffer of its rows and
  returns the lifetimes that finished (`buffers.episode_width` columns: `buffers.METRIC_NAMES`, with
  tasks on `buffers.TASK_OUTCOME`, then the row). A world whose episode ended (its horizon, or
  nobody left to respawn) writes its rows' ``final_<field>``, resets at once and sets ``reset``.
  ``episode_seeds()``, ``ticks()`` and ``restore(seeds, logs)`` let a lost block be rebuilt by
  replaying its episodes.
- **Identity.** For the same seeds and actions every byte of every buffer is the same whichever the
  engine and the backend (tests/test_fused.py, tests/test_vector_tasks.py).
"""
