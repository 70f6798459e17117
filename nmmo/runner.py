"""Engine-driving commands: `nmmo run` (simulate a policy, print the metric table) and `nmmo demo`
(a map, then a short tournament of the scripted bots)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from nmmo import config as config_module

console = Console(soft_wrap=True, markup=False)  # one line per path or command (copyable), printed as typed

from nmmo.metrics import METRICS  # noqa: E402 - the table's rows


def cli_command() -> str:
    """How the user's shell reaches this CLI: ``nmmo`` when that is on PATH, else the script beside
    this interpreter (``.venv/bin/nmmo`` inside a checkout), else ``python -m nmmo``."""
    script = Path(sys.executable).parent / "nmmo"
    found = shutil.which("nmmo")
    if found and script.exists() and Path(found).resolve() == script.resolve():
        return "nmmo"
    if script.exists():
        relative = os.path.relpath(script)
        return relative if not relative.startswith("..") else str(script)
    return f"{sys.executable} -m nmmo"


def simulate(config, policy_spec: str, ticks: int, seed: int, progress: bool = True, record: str | None = None,
             value_overlay: bool = False) -> dict:
    """Run one policy for every agent for `ticks` ticks; return per-lifetime metrics and timing.

    `record` saves a replay there; `value_overlay` paints the policy's value estimates into a
    "value" overlay every tick: each tile's mean estimate over the run so far (`ValueMap`; the
    policy must expose `last_values`, as checkpoints do)."""
    from tqdm import tqdm

    import nmmo
    from nmmo.enums import EntityAttr
    from nmmo.overlays import ValueMap
    from nmmo.policy import load_policy_class

    config.set("HORIZON", max(config.HORIZON, ticks))
    env = nmmo.Env(config, seed=seed, record=record is not None)
    policy = load_policy_class(policy_spec)(config)
    if value_overlay and not hasattr(policy, "last_values"):
        raise ValueError(f"{policy_spec} has no value estimates (last_values); value overlays need a checkpoint")
    if hasattr(policy, "reset"):
        policy.reset(seed)
    obs, _ = env.reset()
    if value_overlay:
        value_map = ValueMap(config.MAP_SIZE)
        env.overlays.register("value", value_map.heatmap())
    lifetimes: list[dict] = []
    step_time = 0.0
    agent_steps = 0
    for _ in tqdm(range(ticks), desc=f"{policy_spec} on {config.name}", unit="tick", disable=not progress):
        live = {a: o for a, o in obs.items() if a in env.agents}
        actions = policy.act(live)
        if value_overlay and live:
            me = np.stack([live[a]["Entity"][0] for a in policy.last_values])
            values = np.array(list(policy.last_values.values()))
            value_map.add(me[:, EntityAttr.ROW], me[:, EntityAttr.COL], values)
            env.overlays.update("value", value_map.heatmap())
        start = time.perf_counter()
        obs, _, terminations, truncations, infos = env.step(actions)
        step_time += time.perf_counter() - start
        agent_steps += len(obs)
        lifetimes += [info["episode"] for info in infos.values() if "episode" in info]
        if not env.agents:
            break
    # agents still alive at the end are reported as if the episode ended here
    if env.agents:
        from nmmo.metrics import lifetime_metrics

        state = env.realm.state
        rows = np.flatnonzero(state.entities.alive[: env.n_slots])
        metrics = lifetime_metrics(state, rows)
        lifetimes += [{k: v[i].item() for k, v in metrics.items()} for i in range(rows.size)]
    if record is not None:
        env.save_replay(record)
    return {"lifetimes": lifetimes, "ticks": env.realm.state.tick, "step_time": step_time,
            "agent_steps": agent_steps, "issued": env.realm.state.next_player_id - 1,
            "npcs": len(env.realm.npcs)}


def metric_table(title: str, lifetimes: list[dict]) -> Table:
    table = Table(title=title)
    table.add_column("metric")
    for column in ("mean", "max"):
        table.add_column(column, justify="right")
    for name in METRICS:
        values = np.array([life[name] for life in lifetimes], dtype=float)
        if values.size:
            table.add_row(name, f"{values.mean():.2f}", f"{values.max():.2f}")
        else:
            table.add_row(name, "-", "-")
    return table


def _cmd_run(args: argparse.Namespace) -> int:
    config = config_module.resolve(args.config)
    result = simulate(config, args.policy, args.ticks, args.seed, record=args.record, value_overlay=args.value_overlay)
    if args.record:
        console.print(f"replay: {args.record}  (watch: {cli_command()} serve --replay {args.record})", highlight=False)
    console.print(metric_table(f"{args.policy} on {config.name}: {len(result['lifetimes'])} lifetimes, "
                               f"{result['ticks']} ticks", result["lifetimes"]))
    console.print(f"{result['agent_steps'] / max(result['step_time'], 1e-9):,.0f} agent-steps/s in env.step")
    return 0


DEMO_POLICIES = ["scripted:Combat", "scripted:Forage", "scripted:Meander", "random"]


def _cmd_demo(args: argparse.Namespace) -> int:
    from evaluation.cli import print_tournament, wide_console
    from evaluation.results import save_results
    from evaluation.tournament import run_tournament
    from nmmo import world

    config = config_module.resolve(args.config)
    if args.serve:  # a bad --allow-origin fails now, not after the tournament
        from client_server.guard import normalize_origin

        for origin in args.allow_origin:
            normalize_origin(origin)
    console.rule(f"nmmo demo: {config.name}")
    start = time.perf_counter()
    game_map = world.get_map(config, world.map_seed(config, 0, "eval"))
    stats = world.map_stats(game_map)
    preview = world.preview_png(game_map, args.out / "demo_map.png")
    console.print(f"1. generated held-out map 0 ({game_map.size}x{game_map.size}, seed {game_map.seed}) in "
                  f"{time.perf_counter() - start:.2f} s: water {stats['fractions']['water']:.2f}, forest "
                  f"{stats['fractions']['forest']:.2f}, {stats['reachable_fraction']:.0%} of walkable tiles "
                  f"reachable from spawns; preview {preview}")
    ticks = config.HORIZON if args.ticks is None else args.ticks
    console.print(f"2. tournament: {', '.join(DEMO_POLICIES)} share {config.PLAYER_N} agents in equal shares with "
                  f"{config.NPC_N if config.has('NPC') else 0} NPCs; {args.episodes} episodes of {ticks} "
                  "ticks on held-out maps, ranked by achievement then lifetime, rated with TrueSkill")
    replays = args.out / "replays"
    results = run_tournament(config, DEMO_POLICIES, episodes=args.episodes, ticks=ticks, seed=0,
                             workers=args.workers, record_dir=str(replays))
    print_tournament(wide_console(), results)
    paths = save_results(results, args.out)
    console.print("3. results: " + ", ".join(str(p) for p in paths.values()) + f"; replays in {replays}/",
                  highlight=False)
    if not args.serve:
        console.print(f"4. watch an episode: {cli_command()} serve --replay {replays / 'episode_000.replay'}",
                      highlight=False)
        return 0
    console.print("4. serving the 3D viewer on episode 0 (the others are in its replay list)", highlight=False)
    args.replay, args.replay_dir, args.live = str(replays / "episode_000.replay"), str(replays), False
    return _cmd_serve(args)


def add_allow_origin(parser: argparse.ArgumentParser) -> None:
    """`--allow-origin ORIGIN` (repeatable): pages besides the viewer's own that may use the server."""
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept websockets and requests from this origin, e.g. http://myhost:8000 "
                             "(repeatable; default: only the viewer's own page on 127.0.0.1/localhost)")


def add_ray_flags(parser: argparse.ArgumentParser) -> None:
    """`--ray` / `--ray-address ADDR`: the same command on Ray actors, locally or on a cluster."""
    parser.add_argument("--ray", action="store_true",
                        help="run the workers as Ray actors (a local Ray with this machine's cores)")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="run the workers on this Ray cluster (implies --ray), e.g. ray://head:10001 or auto")


def ray_options(args: argparse.Namespace) -> dict:
    """The backend keyword arguments the Ray flags ask for."""
    use_ray = args.ray or args.ray_address is not None
    return {"backend": "ray" if use_ray else "process", "ray_address": args.ray_address}


def _cmd_train(args: argparse.Namespace) -> int:
    try:
        from baselines.ppo import Args, train
    except ImportError as err:
        raise ValueError(f"training needs the [train] extra (pip install torch==2.13.0, then -e '.[train]'): "
                         f"{err}") from None
    shaping = {} if args.resource_reward is None else {"resource_reward": args.resource_reward}
    summary = train(Args(config=args.config, env=args.env, minutes=args.minutes, out=args.out, num_envs=args.num_envs,
                         workers=args.workers, hidden=args.hidden, iterations=args.iterations, seed=args.seed,
                         resume=args.resume, wandb=args.wandb, device=args.device, league=args.league,
                         league_sampling=args.league_sampling, league_snapshot_every=args.league_snapshot_every,
                         league_bots=tuple(args.league_bots), **shaping, **ray_options(args)))
    last = summary["history"][-1] if summary["history"] else {}
    lifetime = last.get("lifetime", float("nan"))
    console.print(f"trained {summary['iterations']} iterations, {summary['steps']:,} agent-steps "
                  f"({summary['parameters']:,} parameters); last mean lifetime {lifetime:.1f}; "
                  f"checkpoint {summary['checkpoint']}; curves {args.out}/curves.png", highlight=False)
    if "league" in summary:
        console.print(league_table(summary["league"]))
        console.print(f"league: {args.out}/league.json, {args.out}/league.png", highlight=False)
    return 0


def league_table(rows: list[dict]) -> Table:
    """The league after training: every member's SR, mu, sigma and match record."""
    table = Table(title="League (SR 1500 = scripted:Combat)")
    table.add_column("policy", overflow="fold")
    for name in ("SR", "mu", "sigma", "W", "L", "D", "joined"):
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(row["policy"], f"{row['sr']:.0f}", f"{row['mu']:.2f}", f"{row['sigma']:.2f}", str(row["wins"]),
                      str(row["losses"]), str(row["draws"]), str(row["added"]))
    return table


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from client_server.server import LiveSession, create_app, serve
    except ImportError as err:
        raise ValueError(f"the viewer server needs the [serve] extra (pip install -e '.[serve]'): {err}") from None

    if args.live == (args.replay is not None or args.replay_dir is not None):
        raise ValueError("give either --live or --replay PATH / --replay-dir DIR")
    url = f"http://{args.host}:{args.port}/"
    guard = {"host": args.host, "port": args.port, "allow_origins": args.allow_origin}
    if args.live:
        session = LiveSession(config_module.resolve(args.config), args.policy, seed=args.seed, speed=args.speed)
        app, url = create_app(live=session, **guard), url + "?live=1"
    else:
        directory = Path(args.replay_dir) if args.replay_dir else Path(args.replay).parent
        if args.replay and Path(args.replay).parent.resolve() != directory.resolve():
            raise ValueError(f"--replay {args.replay} is not inside --replay-dir {directory}")
        if args.replay:
            from nmmo.replay import load_replay

            load_replay(args.replay)  # a clear error now beats a blank viewer later
            url += f"?replay={Path(args.replay).name}"
        app = create_app(replay_dir=directory, **guard)
    console.print(f"viewer: {url}  (Ctrl-C stops the server)", highlight=False)
    serve(app, host=args.host, port=args.port)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="simulate a policy for N ticks and print the metric table")
    run.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    run.add_argument("--policy", default="random", help="random, idle, pkg.module:Class or file.py:Class")
    run.add_argument("--ticks", type=int, default=256)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--record", default=None, metavar="PATH", help="save the run as a replay")
    run.add_argument("--value-overlay", action="store_true",
                     help="paint the policy's value estimates into a 'value' overlay (checkpoints)")
    run.set_defaults(func=_cmd_run)

    train = sub.add_parser("train", help="train the PPO baseline (needs the [train] extra)")
    train.add_argument("--config", default="train_small", help="config name, preset or TOML path")
    train.add_argument("--env", default=None, metavar="SPEC",
                       help="your nmmo.Env subclass (custom reward) as file.py:Class or pkg.module:Class")
    train.add_argument("--resource-reward", type=float, default=None, metavar="R",
                       help="the trainer's shaping per unit of food or water gained (default 0.02; 0: the env's "
                            "reward alone)")
    train.add_argument("--minutes", type=float, default=20.0)
    train.add_argument("--out", default="out/train", help="checkpoint, logs and curves go here")
    train.add_argument("--num-envs", type=int, default=8)
    train.add_argument("--workers", type=int, default=0, help="env worker processes (with --ray: Ray actors)")
    train.add_argument("--hidden", type=int, default=64, help="LSTM hidden size")
    train.add_argument("--iterations", type=int, default=0, help="stop after this many PPO iterations")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    train.add_argument("--wandb", action="store_true", help="also log to wandb (offline unless logged in)")
    train.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    train.add_argument("--league", action="store_true",
                       help="population play: opponents drawn from a league of snapshots and bots, rated by TrueSkill")
    train.add_argument("--league-sampling", default="uniform", choices=["uniform", "latest", "rating"],
                       help="how each env's opponent is drawn (rating: TrueSkill-matched)")
    train.add_argument("--league-snapshot-every", type=int, default=10, metavar="N",
                       help="a frozen copy of the learner joins the league every N iterations")
    train.add_argument("--league-bots", nargs="+", default=["scripted:Forage", "scripted:Combat"], metavar="SPEC",
                       help="policy specs in the league from the start")
    add_ray_flags(train)
    train.set_defaults(func=_cmd_train)

    srv = sub.add_parser("serve", help="serve the 3D viewer for a replay or a live run")
    srv.add_argument("--replay", default=None, metavar="PATH", help="a .replay file to watch")
    srv.add_argument("--replay-dir", default=None, metavar="DIR", help="serve every replay in DIR")
    srv.add_argument("--live", action="store_true", help="run a simulation and stream it")
    srv.add_argument("--config", default="small_maps", help="live: config name, preset or TOML path")
    srv.add_argument("--policy", default="scripted:Combat", help="live: the policy driving every agent")
    srv.add_argument("--seed", type=int, default=0)
    srv.add_argument("--speed", type=float, default=10.0, help="live: ticks per second")
    srv.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    srv.add_argument("--port", type=int, default=8000)
    add_allow_origin(srv)
    srv.set_defaults(func=_cmd_serve)

    demo = sub.add_parser("demo", help="the main job on embedded defaults")
    demo.add_argument("--config", default="tournament",
                      help="config name, preset or TOML path (default: tournament, the canonical format)")
    demo.add_argument("--ticks", type=int, default=None, help="ticks per tournament episode (default: the HORIZON)")
    demo.add_argument("--episodes", type=int, default=4, help="tournament episodes")
    demo.add_argument("--workers", type=int, default=2, help="episodes run in parallel (0: in this process)")
    demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where outputs go")
    demo.add_argument("--serve", action="store_true", help="end by serving the viewer on the first episode")
    demo.add_argument("--host", default="127.0.0.1", help="with --serve: address to bind")
    demo.add_argument("--port", type=int, default=8000, help="with --serve: port")
    add_allow_origin(demo)
    demo.set_defaults(func=_cmd_demo)
