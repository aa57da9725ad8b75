"""Abstention on planner teams: with and without it, side by side (same seeds).

Planners under ``shared`` and ``sequential`` abstain when every remaining goal unit is
held or claimed by a teammate; "without" turns abstention off from round 0
(``regulate:allow_abstain=false@0``). With a priority shift at round 5
(``priority:put_fridge@5``) as well. Prints success, ticks (mean and sd), the
abstention rate and the mid-task / end-of-task abstentions (agent-rounds; older
versions lack them, ``-``) and the ratio of mean ticks with to without abstention.

    python benchmarks/teams/abstention.py [--seeds 5] [--agents 5] [--layout house]
"""

from __future__ import annotations

import statistics as st
import sys
from pathlib import Path

from orgteams.run import run_episode

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import cores_and_load, parser  # noqa: E402

CONDITIONS = {"none": [], "priority": ["priority:put_fridge@5"]}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--layout", default="house")
    ap.add_argument("--task", default="prepare_afternoon_tea")
    args = ap.parse_args()
    print(f"{args.agents} planners, {args.task} on {args.layout}, seeds 0..{args.seeds - 1}; "
          f"{cores_and_load()}")
    print("| protocol | shock | abstention | success | ticks mean (sd) | abstention rate "
          "| mid / end-of-task abstentions |")
    print("|---|---|---|---:|---:|---:|---:|")
    for org in ("shared", "sequential"):
        for cond, shocks in CONDITIONS.items():
            ticks = {}
            for abstain in (True, False):
                off = [] if abstain else ["regulate:allow_abstain=false@0"]
                runs = [run_episode(task=args.task, layout=args.layout, organization=org,
                                    agents=args.agents, backend="planner", seed=s,
                                    shocks=shocks + off, log_path=None).summary
                        for s in range(args.seeds)]
                t = [r.ticks for r in runs]
                ticks[abstain] = st.mean(t)
                mid = sum(r.get("mid_task_abstentions", 0) for r in runs)
                end = sum(r.get("end_of_task_abstentions", 0) for r in runs)
                kinds = f"{mid} / {end}" if runs[0].has("mid_task_abstentions") else "-"
                print(f"| {org} | {cond} | {'on' if abstain else 'off'} | "
                      f"{sum(r.success for r in runs)}/{len(runs)} | {st.mean(t):.1f} "
                      f"({st.stdev(t) if len(t) > 1 else 0:.1f}) | "
                      f"{st.mean(r.abstention_rate for r in runs):.2f} | {kinds} |")
            print(f"ticks with / without abstention ({org}, {cond}): "
                  f"{ticks[True] / ticks[False]:.3f}")


if __name__ == "__main__":
    main()
