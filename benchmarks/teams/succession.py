"""Leader removal on planner teams: the rules' ``succession`` side by side (no LLM).

For each organization and team size, the top leader (agent_0) is removed at round
``--round`` and the same seeds are played with each succession rule. Prints success,
mean ticks (sd) and the successions recorded; ``next`` and ``elect`` record one per
episode where agent_0 still held a seat (an election may have passed it on), ``none``
none.

    python benchmarks/teams/succession.py [--seeds 10] [--layout house] [--round 5] [--orgs pyramid]
"""

from __future__ import annotations

import statistics as st
import sys
from pathlib import Path

from orgteams.organizations import load_organization
from orgteams.run import run_episode

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import markdown_row, markdown_rule, parser  # noqa: E402

CASES = (("leader", ("next", "none")), ("pyramid", ("next", "none")),
         ("elected_leader", ("elect", "none")))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--layout", default="house")
    ap.add_argument("--task", default="prepare_afternoon_tea")
    ap.add_argument("--round", type=int, default=5)
    ap.add_argument("--orgs", default=",".join(name for name, _ in CASES),
                    help="comma list of the organizations to play (default: all three)")
    args = ap.parse_args()
    orgs = args.orgs.split(",")
    print(f"{args.task} on {args.layout}, remove:agent_0@{args.round}, planners, "
          f"seeds 0-{args.seeds - 1}")
    print(markdown_row("organization", "agents", "succession", "success", "ticks mean (sd)",
                       "successions"))
    print(markdown_rule("lrlrrr"))
    for name, rules in CASES:
        if name not in orgs:
            continue
        for n in (5, 9):
            for succession in rules:
                org = load_organization(name)
                org = org.updated(rules={**org.model_dump(mode="json")["rules"],
                                         "succession": succession})
                eps = [run_episode(task=args.task, layout=args.layout, organization=org,
                                   agents=n, backend="planner", seed=s,
                                   shocks=[f"remove:agent_0@{args.round}"],
                                   log_path=None).summary for s in range(args.seeds)]
                ticks = [e.ticks for e in eps]
                print(markdown_row(name, n, succession,
                                   f"{sum(e.success for e in eps)}/{len(eps)}",
                                   f"{st.mean(ticks):.1f} ({st.stdev(ticks):.1f})",
                                   sum(len(e.successions) for e in eps)))


if __name__ == "__main__":
    main()
