"""Frames per second of ``render_mode="rgb_array"`` on a small and a large layout.

Each frame is a full redraw of a state that changes every tick (random actions),
with a message overlay, as a recorded episode would draw it. The static layer
(walls, floors, room names) is cached per layout, so the first frame is excluded.

Usage::

    python benchmarks/render/render_fps.py [--frames 300] [--fov]

Target: the studio at 60+ frames per second on a 2-core machine.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import numpy as np  # noqa: E402

from orgteams.agents.messages import TeamMessage  # noqa: E402
from orgteams.envs import household_v0  # noqa: E402
from orgteams.envs.render.renderer import attach_renderer  # noqa: E402

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402

LAYOUTS = ("studio", "apartment", "house", "generated:32:0")
TARGET_FPS = {"studio": 60}


def measure(layout: str, frames: int, fov: bool) -> dict:
    env = household_v0.parallel_env(layout=layout, render_mode="rgb_array", num_agents=3)
    env.reset(seed=0)
    attach_renderer(env, show_fov=fov)
    raw = env.unwrapped
    raw.overlay.say(TeamMessage("agent_0", ("agent_1",), "I will take the apples.", round=1))
    raw.overlay.say(TeamMessage("agent_1", ("agent_0",), "OK, I open the fridge.", round=1))
    rng = np.random.default_rng(0)
    shape = env.render().shape  # draws and caches the static layer
    draw_s = 0.0
    for _ in range(frames):
        if not env.agents:
            env.reset(seed=int(rng.integers(1 << 30)))
        env.step({a: int(rng.integers(53)) for a in env.agents})
        t0 = time.perf_counter()
        env.render()
        draw_s += time.perf_counter() - t0
    env.close()
    return {"layout": layout, "size": f"{shape[1]}x{shape[0]}", "fps": frames / draw_s}


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--frames", type=int, default=300)
    options.add_argument("--fov", action="store_true", help="draw the fields of view too")
    args = options.parse_args()
    print(f"rgb_array rendering, {args.frames} frames, fov={'on' if args.fov else 'off'}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    for layout in LAYOUTS:
        try:
            row = measure(layout, args.frames, args.fov)
        except (ImportError, ModuleNotFoundError, ValueError) as exc:
            print(f"  {layout:16s} skipped: {exc}")
            continue
        target = TARGET_FPS.get(layout)
        verdict = "" if target is None else (
            f"  (target {target}: {'met' if row['fps'] >= target else 'MISSED'})")
        print(f"  {row['layout']:16s} {row['size']:>10s}  {row['fps']:7.1f} FPS{verdict}")


if __name__ == "__main__":
    main()
