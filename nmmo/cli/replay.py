"""`nmmo replay export FILE --gif OUT` (and ``--mp4 OUT`` where ffmpeg is installed): a replay as
an animation for a paper or a README, drawn by `nmmo.replays.export` (the picture ``env.render()``
returns, upscaled, with an overlay on request)."""

from __future__ import annotations

import argparse

#: Default bound on what a replay decodes to (the viewer server's default ``--max-replay-mb``).
MAX_REPLAY_MB = 1024


def _cmd_export(args: argparse.Namespace) -> int:
    from nmmo import console as progress_module
    from nmmo.cli import console
    from nmmo.replays.export import Export, auto_scale, check_export, frames, tick_range, write_gif, write_mp4
    from nmmo.replays.replay import load_replay

    replay = load_replay(args.file, max_bytes=args.max_replay_mb * 2**20)
    plan = Export(tick_range(replay.ticks, args.start, args.stop, args.stride),
                  args.scale or auto_scale(replay.size), args.overlay, args.opacity, args.fps)
    check_export(replay, plan)
    width = replay.size * plan.scale
    for out, kind in ((args.gif, "GIF"), (args.mp4, "MP4")):
        if out is None:
            continue
        bar = progress_module.progress(total=len(plan.ticks), desc=f"{kind} {out}", unit="frame",
                                       min_interval=5.0)  # in a log: a line every 5 s
        images = frames(replay, plan)
        if kind == "GIF":
            write_gif(out, images, plan.fps, on_frame=bar.update)
        else:
            write_mp4(out, images, plan.fps, width, on_frame=bar.update)
        bar.close()
        overlay = f", overlay {plan.overlay!r}" if plan.overlay else ""
        console.print(f"{kind}: {out}  ({len(plan.ticks)} frames: ticks {plan.ticks.start}..{plan.ticks[-1]} every "
                      f"{plan.ticks.step}, {width}x{width} px, {plan.fps:g} fps{overlay})", highlight=False)
    return 0


def _check_export(args: argparse.Namespace) -> None:
    if args.gif is None and args.mp4 is None:
        raise ValueError("give --gif OUT and/or --mp4 OUT")
    if args.scale < 0:
        raise ValueError(f"--scale must be >= 0 (0: at least 512 px wide), got {args.scale}")
    if args.max_replay_mb < 1:
        raise ValueError(f"--max-replay-mb must be positive, got {args.max_replay_mb}")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """`nmmo replay export`."""
    from nmmo.cli import add_command

    group = add_command(sub, "replay", "work with replay files: export one as a GIF or MP4")
    group.allow_abbrev = False
    commands = group.add_subparsers(dest="replay_command", required=True)
    export = add_command(commands, "export", "draw a replay tick by tick (what env.render() shows: terrain, players "
                                             "white, NPCs black) into a GIF, or an MP4 where ffmpeg is installed")
    export.allow_abbrev = False
    export.add_argument("file", metavar="FILE", help="a .replay file (nmmo run --record, nmmo tournament --record)")
    export.add_argument("--gif", default=None, metavar="OUT", help="write a looping GIF here")
    export.add_argument("--mp4", default=None, metavar="OUT", help="write an H.264 MP4 here (needs ffmpeg on PATH)")
    export.add_argument("--scale", type=int, default=0, help="pixels per tile (0: at least 512 px wide)")
    export.add_argument("--overlay", default=None, metavar="NAME",
                        help="blend this overlay under the entities, as the viewer does: one the replay recorded "
                             "(value, value landscape, ...) or a built-in (visits, food, water, danger, skills)")
    export.add_argument("--opacity", type=float, default=0.75, help="the overlay's opacity, 0..1")
    export.add_argument("--start", type=int, default=0, help="first tick")
    export.add_argument("--stop", type=int, default=None, help="last tick (None: the replay's last)")
    export.add_argument("--stride", type=int, default=1, help="draw every k-th tick")
    export.add_argument("--fps", type=float, default=10.0, help="frames per second")
    export.add_argument("--max-replay-mb", type=int, default=MAX_REPLAY_MB,
                        help="refuse replays whose arrays decode to more MiB than this")
    export.set_defaults(func=_cmd_export, check=_check_export)
