"""Ticks per second of a watched run (``orgteams run --render human``) beside the same run
headless, at 3, 9, 32 and 64 agents.

A planner team under ``leader`` plays the first ``--ticks`` ticks of an episode on the
house (``generated:16:0`` from 32 agents: the house has 273 floor cells) twice: once
with the live window at ``--fps`` ticks per second (x1), once without any window. The
window should keep the pace it is asked for (``--fps``) as long as the team's own
work per tick (the headless column) fits in a frame: the check is window ticks/s
against ``min(--fps, headless)``, within 2x. Both runs are the same episode (same
seed, same ticks), side by side in one process.

Usage (a real display, or ``SDL_VIDEODRIVER=dummy`` for the same code without one)::

    python benchmarks/render/window_pace.py [--ticks 40] [--fps 10] [--agents 3,9,32,64]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from orgteams.run import run_episode  # noqa: E402


def layout_for(agents: int) -> str:
    return "house" if agents <= 16 else "generated:16:0"


def measure(agents: int, ticks: int, fps: float, render: str | None) -> tuple[float, int, int]:
    """(ticks per second, ticks played, rounds) of one run."""
    t0 = time.perf_counter()
    result = run_episode(layout=layout_for(agents), organization="leader", agents=agents,
                         backend="planner", seed=0, max_ticks=ticks, render=render,
                         log_path=None, fps=fps, hold=False)
    wall = time.perf_counter() - t0
    return result.summary["ticks"] / wall, result.summary["ticks"], result.summary["rounds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=40)
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--agents", default="3,9,32,64")
    args = parser.parse_args()
    sizes = [int(x) for x in args.agents.split(",")]
    print(f"window vs headless, planner team under leader, first {args.ticks} ticks, "
          f"--fps {args.fps:g} (x1), video driver {os.environ.get('SDL_VIDEODRIVER', 'default')}"
          f", {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print("| agents | layout | rounds | headless ticks/s | window ticks/s | expected "
          "min(fps, headless) | window / expected |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in sizes:
        headless, played, rounds = measure(n, args.ticks, args.fps, None)
        window, played_w, _ = measure(n, args.ticks, args.fps, "human")
        assert played_w == played, (played, played_w)
        expected = min(args.fps, headless)
        print(f"| {n} | {layout_for(n)} | {rounds} | {headless:.1f} | {window:.2f} | "
              f"{expected:.1f} | {window / expected:.2f} |", flush=True)


if __name__ == "__main__":
    main()
