"""Nine planners on the house: success, ticks and walks given up in jams (no LLM).

Plays ``--seeds`` seeds of each organization with 9 planner agents on the house,
without a shock and with ``remove:agent_0@5`` (succession ``next``), and prints per
row the successes, mean ticks (sd) and how many walks gave up "could not reach ...:
blocked for 26 ticks" in all (a doorway or corridor jam the walk could not get
through); "failed seeds" lists the seeds that ran into the step limit.

    python benchmarks/teams/jams.py [--seeds 40] [--orgs leader,pyramid,none]
"""

from __future__ import annotations

import statistics as st
import sys
from pathlib import Path

from orgteams.agents.records import ActionLine
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.run import run_episode

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import markdown_row, markdown_rule, parser  # noqa: E402


def _episode(org: str, seed: int, shock: str | None) -> tuple[EpisodeSummary, int]:
    organization = load_organization(org)
    if shock:
        organization = organization.updated(
            rules={**organization.model_dump(mode="json")["rules"], "succession": "next"})
    result = run_episode(task="prepare_afternoon_tea", layout="house", agents=9,
                         organization=organization, backend="planner", seed=seed,
                         shocks=[shock] if shock else [], log_path=None)
    blocked = sum(1 for r in result.records if isinstance(r, ActionLine)
                  and "blocked for" in str(r.failure_reason))
    return result.summary, blocked


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--orgs", default="leader,pyramid,none")
    args = ap.parse_args()
    print(f"prepare_afternoon_tea on house, 9 planners, seeds 0-{args.seeds - 1}")
    print(markdown_row("organization", "shock", "success", "ticks mean (sd)",
                       "blocked give-ups", "failed seeds"))
    print(markdown_rule("llrrrl"))
    for shock in (None, "remove:agent_0@5"):
        for org in args.orgs.split(","):
            if shock and org == "none":
                continue  # the shock rows: organizations with a leader to succeed
            runs = [(s, *_episode(org, s, shock)) for s in range(args.seeds)]
            ticks = [r[1].ticks for r in runs]
            failed = [str(s) for s, summary, _ in runs if not summary.success]
            wins = sum(r[1].success for r in runs)
            print(markdown_row(org, shock or "-", f"{wins}/{len(runs)}",
                               f"{st.mean(ticks):.1f} ({st.stdev(ticks):.1f})",
                               sum(r[2] for r in runs), ", ".join(failed) or "-"), flush=True)


if __name__ == "__main__":
    main()
