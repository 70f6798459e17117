"""File formats: atomic writes (`files`), bounded reading of untrusted ``.npz`` archives (`npz`),
PNG images (`png`) and replays (`replay`)."""
