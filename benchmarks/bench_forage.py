"""How long the scripted bots live, and what kills them: the figures behind docs/baselines.md.

Usage:
    python benchmarks/bench_forage.py lifetime [--agents 8] [--episodes 8] [--bot Forage]
    python benchmarks/bench_forage.py table [--episodes 4] [--bots Forage Combat Meander]
    python benchmarks/bench_forage.py causes [--agents 256] [--episodes 2] [--bot Forage] [--reveal-map]
    python benchmarks/bench_forage.py lifetime --set MAP_WATER_THRESHOLD=0.365 ...   # any small_maps key
    python benchmarks/bench_forage.py lineup [--episodes 2] [--policies baseline:small scripted:Combat ...]
                                             (--secret INT | --journal out/tournament/episodes.jsonl)

`lifetime` and `table` are `evaluation.evaluate` runs on `small_maps` (self-contained, held-out
maps, continuous respawn, means over every lifetime, those cut by the horizon included): the
first prints the mean lifetime per map and overall with PLAYER_N agents; the second the paper's
Table 1 metrics per bot with the config's 256 agents. `causes` replays the same episodes (same
seeds and maps) in this process and classifies every death from the engine state of the tick it
died in (the bots never read it): lava, an NPC or a player hit, starvation, dehydration, both;
it also reports how many forests stood unharvested, per tick on average, in the outer band, and
for each death (with `--agents` at most 32) the walk from the agent's spawn to its nearest
*home*: a drinking tile with a forest or scrub at most 5 steps away, the nearest loop that 10
food and 10 water (the starting capacities) keep up. `--reveal-map` gives the bot's memory the
whole map before the first tick (a bound: what a perfect memory and search would add).
`lineup` replays canonical tournament episodes (the `tournament` config, the seeds, maps and deal
of `nmmo tournament --seed S`; the deal needs the run's secret, from `--secret` or the run's
journal) in this process, for policies that run in-process (scripted:,
baseline:, random, idle), and reports per policy when its agents died and of what, naming the
policy of the player that dealt a killing hit.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

import nmmo
from evaluation import evaluate
from evaluation.episode import episode_seeds, eval_map_seeds, policy_seed
from nmmo.core.enums import Material

METRICS = ("lifetime", "achievement", "player_kills", "equipment", "explore", "forage")


def small_maps(agents: int | None = None, overrides: dict | None = None) -> nmmo.config.Config:
    """small_maps with PLAYER_N = `agents` and the `--set KEY=VALUE` keys (e.g. the map thresholds
    that give nmmo 2.1.1's material fractions)."""
    config = nmmo.config.load("small_maps")
    for key, value in (overrides or {}).items():
        config.set(key, value)
    return config if agents is None else config.set("PLAYER_N", agents)


def override(text: str) -> tuple[str, object]:
    """`KEY=VALUE` from the command line; the value read as JSON (numbers, true/false), else text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--set wants KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def lifetime(bot: str, agents: int, episodes: int, seed: int, workers: int, overrides: dict | None = None) -> None:
    start = time.perf_counter()
    result = evaluate(small_maps(agents, overrides), f"scripted:{bot}", episodes=episodes, seed=seed, workers=workers,
                      progress=False)
    spec = f"scripted:{bot}"
    for entry in result["episodes"]:
        life = entry["metrics"][spec]["lifetime"]
        print(f"map {entry['map_seed']}: lifetime {life['mean']:.1f} over {life['count']} lifetimes")
    life = result["metrics"][spec]["lifetime"]
    print(f"{bot}, {agents} agents, {episodes} maps: mean lifetime {life['mean']:.1f} "
          f"(std {life['std']:.1f}, {life['count']} lifetimes) [{time.perf_counter() - start:.0f}s]")


def table(bots: list[str], episodes: int, seed: int, workers: int, overrides: dict | None = None) -> None:
    print("| bot | " + " | ".join(METRICS) + " | lifetimes |")
    print("|---" * (len(METRICS) + 2) + "|")
    for bot in bots:
        result = evaluate(small_maps(None, overrides), f"scripted:{bot}", episodes=episodes, seed=seed, workers=workers,
                          progress=False)
        m = result["metrics"][f"scripted:{bot}"]
        print(f"| {bot} | " + " | ".join(f"{m[k]['mean']:.2f}" for k in METRICS) + f" | {m['lifetime']['count']} |",
              flush=True)


def death_cause(state, slot: int) -> str:
    """Why the player in `slot` died this tick, from the state before its row is reused."""
    ent = state.entities
    if state.tiles.material[ent.row[slot], ent.col[slot]] == Material.LAVA:
        return "lava"
    if ent.damage_taken[slot] > 0 and ent.attacker_id[slot] != 0:
        return "npc" if ent.attacker_id[slot] < 0 else "player"
    starving, parched = ent.food[slot] == 0, ent.water[slot] == 0
    return {(True, False): "starvation", (False, True): "dehydration", (True, True): "starvation+dehydration"}.get(
        (bool(starving), bool(parched)), "other")


#: A home: a drinking tile with a forest (or scrub, which regrows) at most this many steps away.
HOME_REACH = 5


def home_distance(tiles, row: int, col: int) -> int:
    """Walking steps from (row, col) to the nearest home on the true map (`state.tiles`; -1: none
    reachable)."""
    from nmmo.core.rules import WALKABLE
    from scripted.memory import FAR, closed_border, distance_field

    material = tiles.material
    size = material.shape[0]
    open_ = closed_border(WALKABLE[material].ravel().copy(), size)
    drink = tiles.water_adjacent
    food = np.flatnonzero((material == Material.FOREST) | (material == Material.SCRUB))
    nothing = np.zeros(0, dtype=np.int64)
    to_food = distance_field(open_, food, np.zeros(food.size, dtype=np.int64), size, nothing, size * size,
                             min_rings=HOME_REACH + 1)
    homes = np.flatnonzero(drink.ravel() & open_ & (to_food <= HOME_REACH))
    here = np.array([row * size + col])
    field = distance_field(open_, homes, np.zeros(homes.size, dtype=np.int64), size, here, size * size)
    return -1 if field[here[0]] >= FAR else int(field[here[0]])


def deaths(env: nmmo.Env, terminated: dict[int, bool]) -> list[tuple[int, int, str]]:
    """(agent, slot, cause) of each agent that died in the step that gave `terminated`."""
    state = env.realm.state
    return [(aid, slot, death_cause(state, slot)) for aid, done in terminated.items() if done
            for slot in [int(np.flatnonzero(state.entities.id[: env.n_slots] == aid)[0])]]


def causes(bot: str, agents: int, episodes: int, seed: int, reveal_map: bool = False,
           overrides: dict | None = None) -> None:
    import scripted

    config = small_maps(agents, overrides)
    band = None
    totals: Counter = Counter()
    lifetimes: list[dict] = []
    homes: list[int] = []
    for s, map_seed in zip(episode_seeds(seed, episodes), eval_map_seeds(config, episodes), strict=True):
        env = nmmo.Env(config, seed=s)
        policy = getattr(scripted, bot)(config)
        obs, _ = env.reset(seed=s, options={"map_seed": map_seed})
        policy.reset(policy_seed(s, 0))
        if reveal_map:
            policy.memory.material[:] = env.realm.state.tiles.material
        if band is None:
            from scripted.memory import outer_band

            band = outer_band(config, policy.safe_danger if hasattr(policy, "safe_danger") else 0.5)
        fresh, ticks, found = 0, 0, Counter()
        while env.agents:
            obs, _, terminated, _, infos = env.step(policy.act({a: o for a, o in obs.items() if a in env.agents}))
            for aid, _, cause in deaths(env, terminated):
                found[cause] += 1
                if agents <= 32 and hasattr(policy, "book"):
                    row, col = (int(x) for x in policy.book.spawn[aid])
                    home = home_distance(env.realm.state.tiles, row, col)
                    homes.append(home)
                    print(f"  tick {ticks + 1}: agent {aid} died of {cause}; spawned at ({row}, {col}), "
                          f"{home} steps from the nearest home")
            lifetimes += [info["life"] for info in infos.values() if "life" in info]
            fresh += int(np.count_nonzero(env.realm.state.tiles.material.ravel()[band] == Material.FOREST))
            ticks += 1
        totals.update(found)
        print(f"map {map_seed}: deaths {dict(found)}; unharvested band forests per tick {fresh / ticks:.0f}")
    means = {k: np.mean([life[k] for life in lifetimes]) for k in METRICS}
    print(f"{bot}, {agents} agents, {episodes} maps, {len(lifetimes)} lifetimes"
          + (" (memory given the whole map)" if reveal_map else "") + ": "
          + ", ".join(f"{k} {v:.2f}" for k, v in means.items()) + f"; deaths {dict(totals)}")
    # achievement points by category: each category's tiers alone (the total is their sum)
    from nmmo.core.metrics import ACHIEVEMENT_TIERS, achievement_points

    values = {name: np.array([life[name] for life in lifetimes], dtype=np.float64) for name in ACHIEVEMENT_TIERS}
    zero = {name: np.zeros(len(lifetimes)) for name in ACHIEVEMENT_TIERS}
    parts = {name: achievement_points({**zero, name: values[name]}).mean() for name in ACHIEVEMENT_TIERS}
    print("achievement points per lifetime by category: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()))
    if homes:
        far = sum(1 for h in homes if h < 0 or h >= 14)
        print(f"deaths whose spawn was 14 or more steps (or no path) from the nearest home: {far} of {len(homes)}")


def lineup(policies: list[str], episodes: int, seed: int, secret: int) -> None:
    from evaluation.episode import deal
    from evaluation.tournament import equal_shares, tournament_policies
    from nmmo.policy import load_policy_class

    policies = tournament_policies(policies)
    config = equal_shares(nmmo.config.load("tournament"), len(policies))
    causes: dict[str, Counter] = {spec: Counter() for spec in policies}
    ticks: dict[str, list[int]] = {spec: [] for spec in policies}
    for s, map_seed in zip(episode_seeds(seed, episodes), eval_map_seeds(config, episodes), strict=True):
        env = nmmo.Env(config, seed=s)
        obs, _ = env.reset(seed=s, options={"map_seed": map_seed})
        team_size = config.PLAYER_TEAM_SIZE  # the tournament's deal: a policy per team, seed and secret
        team_policy = deal(s, -(-config.PLAYER_N // team_size), len(policies), secret)
        handles = [load_policy_class(spec)(config) for spec in policies]
        for index, handle in enumerate(handles):
            if hasattr(handle, "reset"):
                handle.reset(policy_seed(s, index, secret))
        ids, slots = env.live_players()
        owner = dict(zip(ids.tolist(), team_policy[slots // team_size].tolist(), strict=True))
        while env.agents:
            actions: dict[int, dict] = {}
            live = set(env.agents)
            for index, handle in enumerate(handles):
                mine = {a: o for a, o in obs.items() if a in live and owner[a] == index}
                if mine:
                    actions.update(handle.act(mine) or {})
            obs, _, terminated, _, _ = env.step(actions)
            for aid, slot, cause in deaths(env, terminated):
                if cause == "player":
                    cause = f"hit by {policies[owner[int(env.realm.state.entities.attacker_id[slot])]]}"
                causes[policies[owner[aid]]][cause] += 1
                ticks[policies[owner[aid]]].append(env.tick)
        print(f"episode on map {map_seed} done", flush=True)
    share = config.PLAYER_N // len(policies) * episodes
    for spec in policies:
        died = np.array(ticks[spec])
        early = int((died <= 25).sum())
        print(f"{spec}: {len(died)} of {share} agents died, {early} of them by tick 25, median death tick "
              f"{np.median(died) if len(died) else float('nan'):.0f}; {dict(causes[spec].most_common())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["lifetime", "table", "causes", "lineup"])
    parser.add_argument("--policies", nargs="+", default=["baseline:small", "scripted:Combat", "scripted:Forage",
                                                          "scripted:Meander", "random", "idle"],
                        help="lineup: the policies of the tournament (in-process ones)")
    parser.add_argument("--bot", default="Forage")
    parser.add_argument("--bots", nargs="+", default=["Forage", "Combat", "Meander"])
    parser.add_argument("--agents", type=int, default=None, help="PLAYER_N (lifetime: 8, causes: 256)")
    parser.add_argument("--episodes", type=int, default=None, help="maps (lifetime: 8, table: 4, causes: 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--secret", type=lambda text: int(text, 0), default=None,
                        help="lineup: the tournament's secret (the first line of its journal holds it)")
    parser.add_argument("--journal", default=None, help="lineup: a tournament's episodes.jsonl, for its secret")
    parser.add_argument("--reveal-map", action="store_true",
                        help="causes: the bot's memory starts with the whole map (a bound on memory and search)")
    parser.add_argument("--set", type=override, action="append", default=[], metavar="KEY=VALUE",
                        help="a small_maps key to change (repeatable), e.g. MAP_WATER_THRESHOLD=0.365")
    args = parser.parse_args()
    overrides = dict(args.set)
    try:
        small_maps(None, overrides)  # a bad key or value fails now, naming it
    except nmmo.config.ConfigError as error:
        parser.error(str(error))
    if args.what == "lifetime":
        lifetime(args.bot, args.agents or 8, args.episodes or 8, args.seed, args.workers, overrides)
    elif args.what == "table":
        table(args.bots, args.episodes or 4, args.seed, args.workers, overrides)
    elif args.what == "lineup":
        from evaluation.journal import recorded_secret

        secret = args.secret if args.secret is not None else recorded_secret(args.journal) if args.journal else None
        if secret is None:
            parser.error("lineup needs the tournament's deal secret: --secret INT or --journal OUT/episodes.jsonl")
        lineup(args.policies, args.episodes or 2, args.seed, secret)
    else:
        causes(args.bot, args.agents or 256, args.episodes or 2, args.seed, args.reveal_map, overrides)


if __name__ == "__main__":
    main()
