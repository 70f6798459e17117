"""What a viewer shows of a run, live or recorded: frames, overlays, replay files and animations.

- `recording`: a frame of the viewer's columns per tick (`capture`), tile changes, the event log
  and the overlays, kept by a `Recorder` while an env runs (``nmmo.Env(config, record=True)``);
- `replay`: the replay file (one compressed, versioned ``.replay``), written from a recording and
  read back, untrusted, by `load_replay`;
- `overlays`: heatmaps painted over the map, computed from frames, so that a live env
  (``env.overlays``) and the viewer server's replays show the same picture;
- `export`: a replay as a GIF or MP4 (``nmmo replay export``).

It sits above `nmmo.core` (it reads the state tables) and below `nmmo.envs` (the env records
through it), so the env and the viewer share one definition of a frame.
"""
