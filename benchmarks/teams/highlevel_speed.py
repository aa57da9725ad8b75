"""Decision rounds per second of 3 planners on the high-level env, and planning's share.

    python benchmarks/teams/highlevel_speed.py [--seconds 3]

For each layout (``studio``, ``house``, ``generated:32:0``) it runs complete episodes
of 3 :class:`PlannerAgent` s (``run_team``: communicate, act, step) for about
``--seconds`` and reports decision rounds per second, ticks per second, and the
share of wall time spent in path planning: :class:`Walker.next_action` (one walking
step, including detours around agents) and :meth:`Navigator.distance_map` when
called from elsewhere (the planner ranking targets by distance). Distance maps are
cached per layout, so only the first episode on a layout computes most of them;
``maps computed`` counts the BFS runs (cache misses and per-tick detours).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from orgteams.agents.planner.planner import PlannerAgent
from orgteams.envs.core.navigation import Navigator, Walker
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.planner_team import run_team

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import markdown_row, markdown_rule, parser  # noqa: E402

LAYOUTS = ("studio", "house", "generated:32:0")


class PlanningTimer:
    """Wraps the navigation entry points and sums their outermost wall time."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0

    def wrap(self, cls: type, name: str) -> None:
        original = getattr(cls, name)
        timer = self

        def timed(*args, **kwargs):
            if timer._depth:
                return original(*args, **kwargs)
            timer._depth += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - start
                timer._depth -= 1

        setattr(cls, name, timed)


def measure(layout: str, task: str, seconds: float, timer: PlanningTimer) -> dict:
    env = HighLevelEnv(layout=layout, task=task, num_agents=3)
    env.reset(seed=0)
    nav = env.nav  # the env's own, kept across its episodes
    bfs_before = nav.bfs_calls
    rounds = ticks = episodes = 0
    timer.seconds = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or episodes == 0:
        result = run_team(env, [PlannerAgent(f"agent_{i}") for i in range(3)], seed=episodes)
        rounds += result["rounds"]
        ticks += result["ticks"]
        episodes += 1
    wall = time.perf_counter() - start
    return {"layout": layout, "episodes": episodes, "rounds_per_s": rounds / wall,
            "ticks_per_s": ticks / wall, "planning_share": timer.seconds / wall,
            "ms_per_round": 1000 * wall / rounds,
            "maps_computed": nav.bfs_calls - bfs_before,
            "cells": nav.layout.width * nav.layout.height}


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--seconds", type=float, default=3.0)
    options.add_argument("--task", default="prepare_afternoon_tea")
    args = options.parse_args()
    timer = PlanningTimer()
    timer.wrap(Walker, "next_action")
    timer.wrap(Navigator, "distance_map")
    print(markdown_row("layout", "cells", "episodes", "rounds/s", "ms/round", "ticks/s",
                       "planning share", "maps computed"))
    print(markdown_rule("l" * 8))
    for layout in LAYOUTS:
        try:
            r = measure(layout, args.task, args.seconds, timer)
        except ValueError as exc:  # e.g. a generator that is not there yet
            print(markdown_row(layout, f"skipped: {exc}"))
            continue
        print(markdown_row(r["layout"], r["cells"], r["episodes"], f"{r['rounds_per_s']:.0f}",
                           f"{r['ms_per_round']:.2f}", f"{r['ticks_per_s']:.0f}",
                           f"{r['planning_share']:.0%}", r["maps_computed"]))


if __name__ == "__main__":
    main()
