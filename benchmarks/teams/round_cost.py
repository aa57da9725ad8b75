"""What one decision round costs as the team grows: planner teams under ``leader``.

    python benchmarks/teams/round_cost.py [--sizes 8 16 32 64 128 256] [--rounds 20]
                                          [--layout generated:32:0] [--organization leader]
                                          [--repeats 3]

Per team size, episodes of ``--rounds`` rounds after a first one (seed 0) on the
round loop (:class:`~orgteams.organizations.rounds.runner.TeamRunner`, log kept in memory,
no window); for the fastest of ``--repeats`` it prints: ms per round; the members'
own decisions per round (the sum of their decision records' ``wall``: the planners'
thinking); the framework's share (the rest: contexts, routing and delivery, the
env's ticks, records) and that share per agent, whose ratio to the smallest team's
is the scaling figure (goal: flat within 2x from 8 to 256 agents, i.e. near-linear
in agents and messages); then the part of it spent inside ``env.step`` (the env's
ticks and plans) and the rest, the round loop's own cost per agent, with its ratio.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from orgteams.agents.records import DecisionLine, MessageLine
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.spec.library import load_organization
from orgteams.run import build_team

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402


def measure(n: int, rounds: int, layout: str, organization: str, task: str) -> dict:
    """One episode of ``n`` planners; times per round in ms, from the end of round 0 to
    the end of the last round (the reset and the first round's warm-up left out)."""
    org = load_organization(organization)
    env = HighLevelEnv(layout=layout, task=task, num_agents=n)
    members = build_team("planner", n, org)
    env_s = [0.0, 0]  # seconds inside env.step after round 0, and how many ends were seen
    step = env.step

    def timed_step(actions, **hooks):  # the round loop passes on_tick and should_stop
        start = time.perf_counter()
        try:
            return step(actions, **hooks)
        finally:
            if ends:
                env_s[0] += time.perf_counter() - start

    env.step = timed_step
    ends: list[float] = []
    runner = TeamRunner(env, org, members, max_rounds=rounds + 1,
                        on_round=lambda r, records: ends.append(time.perf_counter()))
    result = runner.run(seed=0)
    played = max(len(ends) - 1, 1)
    wall = ends[-1] - ends[0]
    members_s = sum(r.call.wall or 0.0 for r in result.records
                    if isinstance(r, DecisionLine) and r.round >= 1)
    framework = (wall - members_s) / played * 1000
    env_ms = env_s[0] / played * 1000
    return {"agents": n, "rounds": played, "ms_round": wall / played * 1000,
            "members_ms": members_s / played * 1000, "framework_ms": framework,
            "framework_per_agent_ms": framework / n, "env_ms": env_ms,
            "loop_per_agent_ms": (framework - env_ms) / n,
            "messages": sum(1 for r in result.records if isinstance(r, MessageLine)
                            and r.message is not None and r.message.text and r.round >= 1)}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--layout", default="generated:32:0")
    ap.add_argument("--organization", default="leader")
    ap.add_argument("--task", default="prepare_afternoon_tea")
    ap.add_argument("--repeats", type=int, default=3,
                    help="episodes per size; the fastest is shown (a shared machine is noisy)")
    args = ap.parse_args()
    print(f"planner teams, {args.organization}, {args.layout}, {args.task}, "
          f"{args.rounds} rounds, seed 0, fastest of {args.repeats}")
    print(f"{'agents':>7}{'ms/round':>10}{'members':>10}{'framework':>11}"
          f"{'fw/agent':>10}{'ratio':>7}{'env':>9}{'loop/agent':>12}{'ratio':>7}"
          f"{'msgs/round':>11}")
    base = loop_base = None
    for n in args.sizes:
        row = min((measure(n, args.rounds, args.layout, args.organization, args.task)
                   for _ in range(args.repeats)), key=lambda r: r["ms_round"])
        base = base or row["framework_per_agent_ms"]
        loop_base = loop_base or row["loop_per_agent_ms"]
        print(f"{n:>7}{row['ms_round']:>10.1f}{row['members_ms']:>10.1f}"
              f"{row['framework_ms']:>11.1f}{row['framework_per_agent_ms']:>10.3f}"
              f"{row['framework_per_agent_ms'] / base:>7.2f}{row['env_ms']:>9.1f}"
              f"{row['loop_per_agent_ms']:>12.3f}{row['loop_per_agent_ms'] / loop_base:>7.2f}"
              f"{row['messages'] / row['rounds']:>11.1f}", flush=True)


if __name__ == "__main__":
    main()
