"""File formats, the lowest layer of nmmo (it imports nothing else of it): atomic writes (`files`),
bounded reading of untrusted ``.npz`` archives (`npz`) and torch checkpoints (`torchzip`), and PNG
images (`png`). The replay file, which holds the game's state, is `nmmo.replays.replay`."""
