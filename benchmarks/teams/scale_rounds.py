"""A planner team's decision round against the env's own tick, at 8, 64 and 256 agents.

    python benchmarks/teams/scale_rounds.py [--sizes 8 64 256] [--protocols sequential shared
                                             coordinator leader] [--rounds 10] [--pairs 3]
                                             [--layout generated:32:0]

Issue #28 asks that a planner round at 256 agents cost at most 10x the env's own tick
for those agents. Per team size, side by side in one run, ``--pairs`` times in turn
(so a busy spell of the shared machine falls on all rows alike):

* ``household``: the household env under the high-level one (``household_v0``, array
  observations) ticking the agents with uniform random primitive actions, all valid
  (:func:`harness.random_steps`): CPU ms per tick;
* ``high-level``: :class:`HighLevelEnv` stepping the agents with random valid
  high-level actions (each agent that needs a decision draws one of its available
  actions, seed 0; the draw is not timed): CPU ms per tick inside ``env.step``. Its
  plans walk agents through crowds, which the household's random moves do not;
* per organization, one episode of planners (seed 0) on the round loop
  (:class:`TeamRunner`, log kept in memory as a sweep does, no window): CPU ms per env
  tick from the end of round 0 to the end of round ``--rounds`` (members' decisions,
  messages, records and the env's ticks; the first round's path search on a fresh
  layout and the episode's summary are left out).

Each env row runs for about as many CPU seconds as the planners' episode took (at
most ``--env-seconds``), right after it (:func:`harness.cpu_slice`). It prints each
row's fastest pair and the paired ratios of the planner tick to each env's tick (the
median and range over pairs, :func:`harness.paired_ratio`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.household import HouseholdEnv
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.spec.library import load_organization
from orgteams.run import build_team

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import (  # noqa: E402
    cores_and_load,
    cpu_slice,
    load_average,
    markdown_row,
    markdown_rule,
    paired_ratio,
    parser,
    random_steps,
)

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


class HouseholdTicks:
    """Ticks of the household env with random primitive actions (``step(i)`` returns 1)."""

    def __init__(self, layout: str, task: str, n: int) -> None:
        env = HouseholdEnv(layout=layout, task=task, num_agents=n)
        self._step = random_steps(env, 0, env.action_space(env.possible_agents[0]).n)
        self.cpu = 0.0
        self.ticks = 0

    def step(self, i: int) -> int:
        start = time.process_time()
        self._step(i)
        self.cpu += time.process_time() - start
        self.ticks += 1
        return 1


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
    ap.add_argument("--env-seconds", type=float, default=3.0,
                    help="the most CPU seconds of each env row per pair")
    args = ap.parse_args()
    print(f"{cores_and_load()}; {args.layout}, {args.task}, planner rounds 1-{args.rounds} "
          f"of seed 0, {args.pairs} pairs; CPU ms per tick")
    print(markdown_row("agents", "organization", "household", "high-level", "planner round",
                       "round / household", "round / high-level"))
    print(markdown_rule("llrrrrr"))
    for n in args.sizes:
        envs = {"household": HouseholdTicks(args.layout, args.task, n),
                "high-level": RandomTicks(args.layout, args.task, n)}
        at = dict.fromkeys(envs, 0)
        for name, env in envs.items():  # warm up: the layout's first path searches
            _, at[name] = cpu_slice(env.step, 0.2, at[name], batch=1)
        for organization in args.protocols:
            pairs = []
            for _ in range(args.pairs):
                cpu, ticks = planner_ticks(args.layout, args.task, n, organization,
                                           args.rounds)
                pair = {"planner": 1000 * cpu / ticks}
                for name, env in envs.items():
                    env.cpu, env.ticks = 0.0, 0
                    _, at[name] = cpu_slice(env.step, min(cpu, args.env_seconds), at[name],
                                            batch=1)
                    pair[name] = 1000 * env.cpu / env.ticks
                pairs.append(pair)
            best = {k: min(p[k] for p in pairs) for k in pairs[0]}
            print(markdown_row(n, organization, f"{best['household']:.2f}",
                               f"{best['high-level']:.2f}", f"{best['planner']:.2f}",
                               paired_ratio(pairs, "planner", "household"),
                               paired_ratio(pairs, "planner", "high-level")), flush=True)
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
