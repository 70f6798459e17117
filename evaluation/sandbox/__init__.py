"""The sandbox: where an untrusted submission runs, and the only way in and out of it.

- `host`: the episode's side: a fresh worker process per submission and episode, with a scrubbed
  environment, resource `Limits`, its own process group, started inside the namespaces and a
  cgroup where the machine has them; `start_worker`, `close_worker`, `end_of_episode`;
- `worker`: the process inside (``python -m evaluation.sandbox.worker``): lowers its limits,
  builds the policy, answers each tick;
- `channel`: the frames between the two (data only, never pickles; deadlines and size limits);
- `namespaces` (bubblewrap: an unprivileged uid, no network, a read-only view of the packages and
  the submission's own files) and `cgroups` (memory and processes of all it forks, together);
- `texts`: what a submission said or raised, cut short.

It imports nothing of the tournament (tests/test_layering.py): which policies are trusted, how
faults are counted and how actions are validated are `evaluation.submission`'s, its one client.
"""
