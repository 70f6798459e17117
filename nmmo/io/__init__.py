"""File formats: atomic writes (`files`), bounded reading of untrusted ``.npz`` archives (`npz`)
and torch checkpoints (`torchzip`), PNG images (`png`) and replays (`replay`)."""
