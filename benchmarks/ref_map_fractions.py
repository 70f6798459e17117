"""Material fractions of nmmo 2.1.1's map generator (run with the reference interpreter).

Usage: the reference interpreter is the path `python benchmarks/reference.py` prints (it builds
nmmo 2.1.1 in its own virtual environment on first use); run it from a directory outside any
checkout, so that `import nmmo` finds the reference. From the top of the checkout:
    REF=$(python benchmarks/reference.py) && cd "$(mktemp -d)" && "$REF" "$OLDPWD/benchmarks/ref_map_fractions.py"

Generates the first N maps of an N-map pool with the reference's own generator (Medium preset,
its default terrain settings, MAP_N = N so each map gets its own interpolation factor) and prints
one JSON line: the mean fraction of the playable square per material, the reference's 16
materials folded into ours (water + ocean + fish: water; foilage: forest; void: lava; ore,
tree, crystal, herb, slag, stump, fragment, weeds: 'resource tiles', which our game does not have).
`evaluation/table1.py` calls it for `nmmo experiment table1 --reference-python`.

`--height-quantiles K` prints instead the K quantiles (0 to 1) of the reference's height (the
blended noise before thresholds) over the playable squares, the mean and the standard deviation:
`nmmo/core/world.py`'s REFERENCE_HEIGHT_QUANTILES is this command's output for 64 maps and K = 41.
"""

import argparse
import json
import tempfile

import numpy as np
from nmmo.core.config import Medium, Terrain
from nmmo.core.terrain import MapGenerator
from nmmo.core.terrain import Terrain as TerrainMaker

FOLD = {0: "lava", 1: "water", 14: "water", 15: "water", 2: "grass", 3: "scrub", 4: "forest", 5: "stone"}

parser = argparse.ArgumentParser()
parser.add_argument("--maps", type=int, default=8)
parser.add_argument("--center", type=int, default=128)
parser.add_argument("--height-quantiles", type=int, default=0, metavar="K")
args = parser.parse_args()


class Conf(Medium, Terrain):
    pass


config = Conf()
config.set("MAP_CENTER", args.center)
config.set("MAP_N", args.maps)
config.set("PATH_MAPS", tempfile.mkdtemp(prefix="nmmo_ref_maps_"))
generator = MapGenerator(config)
border = config.MAP_BORDER
playable = slice(border, border + args.center)
if args.height_quantiles:
    heights = np.concatenate([TerrainMaker.generate_terrain(config, idx, None)[0][playable, playable].ravel()
                              for idx in range(args.maps)])
    quantiles = np.quantile(heights, np.linspace(0.0, 1.0, args.height_quantiles))
    print(json.dumps({"maps": args.maps, "center": args.center, "mean": round(float(heights.mean()), 4),
                      "std": round(float(heights.std()), 4), "quantiles": np.round(quantiles, 4).tolist()}))
    raise SystemExit(0)
totals = {}
for idx in range(args.maps):
    _, tiles = generator.generate_map(idx)
    inner = np.asarray(tiles)[playable, playable].astype(int)
    counts = np.bincount(inner.ravel(), minlength=16)
    for index, count in enumerate(counts.tolist()):
        name = FOLD.get(index, "resource tiles")
        totals[name] = totals.get(name, 0.0) + count / inner.size / args.maps
print(json.dumps(totals))
