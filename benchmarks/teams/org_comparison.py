"""Organizations compared on planner teams (no LLM): same seeds, side by side.

Planners follow each organization's machine-readable rules
(:mod:`orgteams.organizations.spec.rules`: who assigns work, when and to whom they report,
budget, corrections, the voting rule, abstention) through its protocol and channels,
so the organization changes outcomes without any model. Prints, per organization,
mean ticks, success rate, message tokens *sent* per tick (the headline) and
*delivered* per tick, duplicated decisions (a new decision whose target another agent
already pursues), abstention rate and leader tenure, with Welch's t-test against
``none``; the tokenizer is printed with the table, and the last line lists the pairs of
organizations whose (ticks, sent per tick) means are equal (there should be none).

    python benchmarks/teams/org_comparison.py [--seeds 20] [--task ...] [--layout ...]
"""

from __future__ import annotations

import statistics as st
import sys
from pathlib import Path

from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.run import run_episode

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402

ORGS = ("none", "decentralized", "leader", "leader_with_correction", "elected_leader",
        "dual_leader", "chain", "pyramid", "dynamic", "coordinator", "broadcast", "shared",
        "sequential", "batched_sequential", "claim_shared")


def welch_p(a: list[float], b: list[float]) -> float | None:
    try:
        from scipy.stats import ttest_ind
    except ImportError:
        return None
    if st.pstdev(a) == 0 and st.pstdev(b) == 0:
        return None
    return float(ttest_ind(a, b, equal_var=False).pvalue)


def run(org: str, seeds: int, task: str, layout: str, agents: int) -> list[EpisodeSummary]:
    return [run_episode(task=task, layout=layout, organization=org, agents=agents,
                        backend="planner", seed=s, log_path=None).summary for s in range(seeds)]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--task", default="prepare_afternoon_tea")
    ap.add_argument("--layout", default="apartment")
    ap.add_argument("--agents", type=int, default=3)
    args = ap.parse_args()
    from orgteams.agents.llm.tokens import tokenizer_name

    print(f"{args.agents} planners, {args.task} on {args.layout}, seeds 0..{args.seeds - 1}, "
          f"tokens counted with {tokenizer_name()}")
    print(f"{'organization':<24}{'success':>8}{'ticks':>9}{'rounds':>8}{'sent/step':>10}"
          f"{'deliv/step':>11}{'dup':>7}{'abst':>6}{'tenure':>8}{'p(dup vs none)':>16}"
          f"{'p(ticks)':>10}")
    base = None
    means: dict[str, tuple[float, float]] = {}
    for org in ORGS:
        rows = run(org, args.seeds, args.task, args.layout, args.agents)
        dup = [r.duplicate_decisions for r in rows]
        ticks = [r.ticks for r in rows]
        if base is None:
            base = (dup, ticks)
        p_dup, p_ticks = welch_p(dup, base[0]), welch_p(ticks, base[1])
        fmt = lambda p: "-" if p is None else f"{p:.3g}"  # noqa: E731
        sent = st.mean(r.comm_tokens_per_step for r in rows)
        means[org] = (st.mean(ticks), sent)
        tenure = [r.leader_tenure for r in rows if r.leader_tenure is not None]
        print(f"{org:<24}{sum(r.success for r in rows) / len(rows):>8.0%}"
              f"{st.mean(ticks):>9.1f}{st.mean(r.rounds for r in rows):>8.1f}"
              f"{sent:>10.2f}"
              f"{st.mean(r.delivered_tokens_per_step for r in rows):>11.2f}{st.mean(dup):>7.2f}"
              f"{st.mean(r.abstention_rate for r in rows):>6.2f}"
              f"{st.mean(tenure) if tenure else float('nan'):>8.1f}"
              f"{fmt(p_dup):>16}{fmt(p_ticks):>10}")
    orgs = list(means)
    same = [f"{a}={b}" for i, a in enumerate(orgs) for b in orgs[i + 1:] if means[a] == means[b]]
    print(f"equal (ticks, sent/step) means: {', '.join(same) or 'none'} "
          f"({len(orgs) * (len(orgs) - 1) // 2} pairs)")


if __name__ == "__main__":
    main()
