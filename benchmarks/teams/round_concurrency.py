"""Does a decision round cost only its critical path of dependent LLM calls?

Teams of LLM agents on a scripted backend with injected latency (``--latency``
seconds per call, as a slow remote model would add). Calls the protocol allows to
run at once (one stage's speakers; the act phase) must overlap, so a round's wall
time should stay within 1.2x its critical path: the sum, over the round's stages
and its act phase, of the slowest call in each (under ``sequential`` and
``batched_sequential`` each stage's act calls are a step of their own: they decide in
turn). Prints that ratio per protocol.

    python benchmarks/teams/round_concurrency.py [--agents 6] [--rounds 3] [--latency 0.2]
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

from orgteams.agents.backends import ScriptedBackend
from orgteams.agents.llm.llm_agent import LLMAgent
from orgteams.agents.records import DecisionLine, MessageLine
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.protocols.facts import PROTOCOL_FACTS
from orgteams.organizations.rounds.runner import TeamRunner

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402

ORGS = ("shared", "broadcast", "claim_shared", "batched_sequential", "coordinator",
        "sequential", "leader", "none")


def measure(org: str, agents: int, rounds: int, latency: float) -> tuple[float, float, int]:
    env = HighLevelEnv(layout="apartment", task="prepare_afternoon_tea", num_agents=agents)
    members = {f"agent_{i}": LLMAgent(f"agent_{i}", ScriptedBackend(latency=latency))
               for i in range(agents)}
    marks: list[float] = []
    runner = TeamRunner(env, load_organization(org), members, max_rounds=rounds,
                        on_round=lambda r, recs: marks.append(time.perf_counter()))
    start = time.perf_counter()
    result = runner.run(seed=0)
    walls = [b - a for a, b in zip([start] + marks[:-1], marks)]
    slowest: dict[tuple, float] = defaultdict(float)
    calls = 0
    # under sequential protocols a speaker decides its action in its own stage's turn:
    # those act calls depend on the earlier stages, one group per stage, not one phase
    in_turn = PROTOCOL_FACTS[load_organization(org).protocol].acts_in_order
    stage_of = {(r.round, r.agent): r.stage for r in result.records
                if isinstance(r, MessageLine)}
    for rec in result.records:
        if not isinstance(rec, DecisionLine) or not rec.call.latency:
            continue
        calls += 1
        stage = getattr(rec, "stage", 0)
        if in_turn and rec.phase == "act":
            stage = stage_of.get((rec.round, rec.agent), 0)
        key = (rec.round, rec.phase, stage)
        slowest[key] = max(slowest[key], rec.call.latency)
    critical = [sum(v for (r, _, _), v in slowest.items() if r == i) for i in range(len(walls))]
    return sum(walls), sum(critical), calls


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--agents", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.2)
    args = ap.parse_args()
    print(f"{args.agents} LLM agents (scripted, {args.latency:.2f} s per call), "
          f"{args.rounds} rounds")
    print(f"{'organization':<20}{'calls':>7}{'wall s':>9}{'critical s':>12}{'ratio':>8}"
          f"{'serial s':>10}")
    for org in ORGS:
        wall, critical, calls = measure(org, args.agents, args.rounds, args.latency)
        print(f"{org:<20}{calls:>7}{wall:>9.2f}{critical:>12.2f}{wall / critical:>8.3f}"
              f"{calls * args.latency:>10.2f}")
    print("ratio = wall / critical path (target <= 1.2); serial = if every call waited "
          "for the previous one")


if __name__ == "__main__":
    main()
