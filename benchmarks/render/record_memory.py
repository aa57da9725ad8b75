"""Peak memory and time of recording an episode to GIF and MP4, before and after streaming.

    python benchmarks/render/record_memory.py [--ticks 570] [--layout house] [--agents 8]

Each row runs in its own process (so peak memory is that row's alone) and draws the
same frames: the reset state and every tick of a random-policy episode on the layout,
off-screen at scale 1. Rows:

* ``frames only``: drawing, no file (the floor every writer starts from);
* ``gif before``: the previous writer, imageio's GIF writer, which keeps every frame
  in memory until it closes;
* ``gif after``: :class:`orgteams.envs.render.video.VideoRecorder` today, frames streamed to a
  lossless file on disk and turned into a GIF with one palette by ffmpeg at close;
* ``mp4``: the same recorder to H.264 (streamed before and after);
* ``record CLI gif``: ``orgteams record --backend random`` end to end (with the held
  speech and end frames, so more frames).

The GIF rows run at a quarter of the episode and at all of it: a streamed GIF's peak
memory stays flat as the episode grows, the old one grows with it. Peak memory is the
process's maximum resident set (``ru_maxrss``) plus, where ffmpeg runs as a child
process, the largest child's (an upper bound: they do not peak at the same moment).
Printed: one row per measurement, the before/after ratios of the GIF rows and how
each GIF row's peak grows with the episode.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


def _peak_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, kids


def child(mode: str, ticks: int, layout: str, agents: int, out: Path) -> dict:
    """One measurement in this process; returns its row."""
    import numpy as np

    from orgteams.envs import household_v0
    from orgteams.envs.render.renderer import PygameRenderer
    from orgteams.envs.render.video import VideoRecorder, random_policy

    env = household_v0.parallel_env(layout=layout, num_agents=agents, max_ticks=ticks)
    raw = env.unwrapped
    act = random_policy(0)
    renderer = PygameRenderer("rgb_array")
    start = time.perf_counter()
    if mode == "gif before":
        import imageio.v2 as iio

        writer = iio.get_writer(out, mode="I", duration=100.0, loop=0)
        add, close = writer.append_data, writer.close
    elif mode == "frames only":
        add, close = (lambda frame: None), (lambda: None)
    else:
        recorder = VideoRecorder(out, fps=10)
        add, close = recorder.add_frame, recorder.close
    env.reset(seed=0)
    frames = 0
    while True:
        frame = renderer.render(raw.world, raw.overlay, raw.display_names)
        add(np.asarray(frame))
        frames += 1
        if not env.agents:
            break
        env.step({a: act(a, raw) for a in env.agents})
    close()
    wall = time.perf_counter() - start
    own, kids = _peak_mb()
    return {"row": mode, "frames": frames, "seconds": round(wall, 1),
            "peak_mb": round(own + kids, 1), "process_mb": round(own, 1),
            "ffmpeg_mb": round(kids, 1),
            "file_mb": round(out.stat().st_size / 2**20, 2) if out.exists() else 0.0}


def run_cli(ticks: int, layout: str, agents: int, out: Path) -> dict:
    """``orgteams record`` to a GIF in a child process, measured from outside."""
    start = time.perf_counter()
    code = ("import resource, sys, json; from orgteams.cli.main import main; "
            "rc = main(sys.argv[1:]); "
            "print(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]), file=sys.stderr)")
    proc = subprocess.run(
        [sys.executable, "-c", code, "record", "--layout", layout, "--agents", str(agents),
         "--backend", "random", "--max-ticks", str(ticks), "--out", str(out), "--json",
         "--quiet"], capture_output=True, text=True, check=True, cwd=out.parent)
    own, kids = json.loads(proc.stderr.strip().splitlines()[-1])
    summary = json.loads(proc.stdout)
    return {"row": "record CLI gif", "frames": summary["frames"],
            "seconds": round(time.perf_counter() - start, 1),
            "peak_mb": round((own + kids) / 1024, 1), "process_mb": round(own / 1024, 1),
            "ffmpeg_mb": round(kids / 1024, 1),
            "file_mb": round(out.stat().st_size / 2**20, 2)}


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--ticks", type=int, default=570)
    options.add_argument("--layout", default="house")
    options.add_argument("--agents", type=int, default=8)
    options.add_argument("--child", default=None, help=argparse.SUPPRESS)
    options.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.ticks, args.layout, args.agents,
                               Path(args.out))))
        return
    rows = []
    short = max(1, args.ticks // 4)
    plan = [("frames only", ".gif", args.ticks), ("gif before", ".gif", short),
            ("gif after", ".gif", short), ("gif before", ".gif", args.ticks),
            ("gif after", ".gif", args.ticks), ("mp4", ".mp4", args.ticks)]
    with tempfile.TemporaryDirectory() as tmp:
        for mode, suffix, ticks in plan:
            out = Path(tmp) / f"{mode.replace(' ', '_')}_{ticks}{suffix}"
            proc = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--ticks", str(ticks),
                 "--layout", args.layout, "--agents", str(args.agents), "--out", str(out)],
                capture_output=True, text=True, check=True)
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(_line(rows[-1]), flush=True)
        rows.append(run_cli(args.ticks, args.layout, args.agents, Path(tmp) / "cli.gif"))
        print(_line(rows[-1]), flush=True)
    by = {(r["row"], r["frames"]): r for r in rows}
    n_short, n_long = short + 1, args.ticks + 1
    before, after = by[("gif before", n_long)], by[("gif after", n_long)]
    print(f"\n{args.layout}, {args.agents} agents, {args.ticks} ticks ({n_long} frames):")
    print(f"  GIF peak memory before / after: {before['peak_mb'] / after['peak_mb']:.1f}x "
          f"({before['peak_mb']:.0f} MB -> {after['peak_mb']:.0f} MB)")
    print(f"  GIF time before / after: {before['seconds'] / after['seconds']:.2f}x "
          f"({before['seconds']:.1f} s -> {after['seconds']:.1f} s)")
    for name in ("gif before", "gif after"):
        grow = by[(name, n_long)]["peak_mb"] / by[(name, n_short)]["peak_mb"]
        print(f"  {name}: peak memory at {n_long} frames / at {n_short} frames: {grow:.2f}x")


def _line(r: dict) -> str:
    return (f"{r['row']:<16} {r['frames']:>5} frames {r['seconds']:>7.1f} s  peak "
            f"{r['peak_mb']:>7.1f} MB (python {r['process_mb']:.0f}, ffmpeg "
            f"{r['ffmpeg_mb']:.0f})  file {r['file_mb']:.2f} MB")


if __name__ == "__main__":
    main()
