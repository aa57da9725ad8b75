"""A planner team's decision round against the env's own tick, at 8, 64 and 256 agents.

    python benchmarks/scale_rounds.py [--sizes 8 64 256] [--protocols sequential shared
                                       coordinator leader] [--rounds 10] [--pairs 3]
                                       [--layout generated:32:0]

Issue #28 asks that a planner round at 256 agents cost at most 10x the env's own tick
for those agents. Per team size, side by side in one run, ``--pairs`` times in turn
(so a busy spell of the shared machine falls on both):

* ``env``: :class:`HighLevelEnv` stepping the agents with random valid actions (each
  agent that needs a decision draws one of its available actions, seed 0; the draw is
  not timed): CPU ms per tick inside ``env.step``, over about as many CPU seconds as
  the planners' episode took (:func:`harness.cpu_slice`);
* per organization, one episode of planners (seed 0) on the round loop
  (:class:`TeamRunner`, log kept in memory as a sweep does, no window): CPU ms per env
  tick from the end of round 0 to the end of round ``--rounds`` (members' decisions,
  messages, records and the env's ticks; the first round's path search on a fresh
  layout and the episode's summary are left out).

It prints each row's fastest pair and the paired ratio (planner tick / env tick of the
same pair: median and range, :func:`harness.paired_ratio`).
"""

from __future__ import annotations

import time

import numpy as np
from harness import (
    cores_and_load,
    cpu_slice,
    load_average,
    markdown_row,
    markdown_rule,
    paired_ratio,
    parser,
)

from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.spec.library import load_organization
from orgteams.run import build_team

PROTOCOLS = ("sequential", "shared", "coordinator", "leader")
"""Organizations by name: the self-organizing paper's three protocols and ``leader``
(protocol ``leader_first``)."""


class RandomTicks:
    """Ticks of ``n`` agents with random valid actions: ``step(i)`` plays one
    ``env.step`` and returns the ticks it played, timing only the step."""

    def __init__(self, layout: str, task: str, n: int) -> None:
        self.env = HighLevelEnv(layout=layout, task=task, num_agents=n)
        self.rng = np.random.default_rng(0)
        self.env.reset(seed=0)
        self.cpu = 0.0  # CPU seconds inside env.step
        self.ticks = 0

    def step(self, i: int) -> int:
        env = self.env
        if not env.agents:
            env.reset(seed=i)
        actions = {}
        for a in env.agents:
            if env.needs_decision(a):
                ids = [x.id for x in env.available_actions(a) if x.id != "continue"]
                actions[a] = ids[self.rng.integers(len(ids))]
        before, start = env.ticks, time.process_time()
        env.step(actions)
        self.cpu += time.process_time() - start
        done = env.ticks - before if env.agents else 1  # a reset restarts the count
        self.ticks += done
        return done


def planner_ticks(layout: str, task: str, n: int, organization: str, rounds: int
                  ) -> tuple[float, int]:
    """CPU seconds and env ticks of rounds 1..``rounds`` of one planner episode."""
    org = load_organization(organization)
    env = HighLevelEnv(layout=layout, task=task, num_agents=n)
    marks: list[tuple[float, int]] = []
    runner = TeamRunner(env, org, build_team("planner", n, org), max_rounds=rounds + 1,
                        on_round=lambda r, lines: marks.append((time.process_time(),
                                                                 env.ticks)))
    runner.run(seed=0)
    (t0, k0), (t1, k1) = marks[0], marks[-1]
    return t1 - t0, max(k1 - k0, 1)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 64, 256])
    ap.add_argument("--protocols", nargs="+", default=list(PROTOCOLS),
                    help="organizations by name")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--layout", default="generated:32:0")
    ap.add_argument("--task", default="prepare_afternoon_tea")
    args = ap.parse_args()
    print(f"{cores_and_load()}; {args.layout}, {args.task}, planner rounds 1-{args.rounds} "
          f"of seed 0, {args.pairs} pairs")
    print(markdown_row("agents", "organization", "env ms/tick", "planner ms/tick",
                       "ratio (median, range)"))
    print(markdown_rule("lrrrr"))
    for n in args.sizes:
        env = RandomTicks(args.layout, args.task, n)
        cpu_slice(env.step, 0.2, 0, batch=1)  # warm up: the layout's first path searches
        i = 0
        for organization in args.protocols:
            pairs = []
            for _ in range(args.pairs):
                cpu, ticks = planner_ticks(args.layout, args.task, n, organization,
                                           args.rounds)
                env.cpu, env.ticks = 0.0, 0
                _, i = cpu_slice(env.step, cpu, i, batch=1)
                pairs.append({"env": 1000 * env.cpu / env.ticks,
                              "planner": 1000 * cpu / ticks})
            print(markdown_row(n, organization, f"{min(p['env'] for p in pairs):.2f}",
                               f"{min(p['planner'] for p in pairs):.2f}",
                               paired_ratio(pairs, "planner", "env")), flush=True)
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
