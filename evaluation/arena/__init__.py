"""The arena: an always-on tournament over an embedded database (``nmmo arena serve``).

A pool of entries (the SR anchor, the paper's scripted bots and the specs an operator adds with
``nmmo arena add``) plays episodes of one format without end. Each episode seats the anchor and a
few others chosen by rating uncertainty and match quality (`evaluation.arena.matchmaking`), is
played by the tournament's own episode code in a worker process (submissions in the sandbox), and
is committed with its seats in one SQLite transaction (`evaluation.arena.db`). The ratings are a
pure function of that episode log (`evaluation.arena.ratings`): recomputed on every start and
checked against the stored snapshot. An episode cut off by a kill -9 (of the server or of a
worker) was only ever *claimed*, never written, so it is played again from its claim or dropped,
never half-counted (`evaluation.arena.server`).

Modules: `db` (schema, migrations, the one write per episode), `queries` (what the status command
and the JSON endpoints read), `ratings`, `matchmaking`, `workers` (episode worker processes or Ray
actors), `server` (the service loop), `api` (the endpoints and pages), `probes` (hostile submissions to
check the bounds with), `cli` (``nmmo arena ...``). Participants (part 2): `participants` (tokens,
versions), `uploads` (the content-addressed store), `smoke` (the test before a version joins),
`writes` (the POST endpoints), `pages` (HTML), `replays` (recording, retention, the viewer),
`participant_cli` (``register``, ``submit``, ``withdraw``). The operator's guide: docs/arena.md;
the participant's: docs/arena_participant.md.
"""
