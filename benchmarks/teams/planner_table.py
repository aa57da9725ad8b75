"""Planner teams on every task and hand-made layout: mean ticks and success rate.

    python benchmarks/teams/planner_table.py [--seeds 20] [--sizes 1 3] [--leader] [--markdown]
    python benchmarks/teams/planner_table.py --derive-limits [--write]

Each cell runs ``--seeds`` episodes (seeds 0..N-1) of ``PlannerAgent`` teams under
the task's tick limit for the layout, everyone hearing everyone (``run_team``).
``--leader`` adds a column where agent_0 leads: everyone still hears everyone, under
the named ``leader`` organization's topology and rules (``assign_work: leader``), so
agent_0 assigns subgoals by distance and the others follow its orders.

``--derive-limits`` runs one planner with no tick limit and prints, per task and
layout, 3x the worst ticks over the seeds (rounded up to a multiple of 10): how the
``step_limits`` in ``assets/tasks/*.yaml`` were set. ``--write`` writes them there.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

from orgteams.agents.planner.planner import PlannerAgent
from orgteams.assets import asset_dir
from orgteams.envs import list_tasks
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.planner_team import everyone_hears_everyone, run_team
from orgteams.organizations.spec.library import load_organization

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import markdown_row, markdown_rule, parser  # noqa: E402

LAYOUTS = ("studio", "apartment", "house")
LIMIT_FACTOR = 3


def run_cell(layout: str, task: str, num_agents: int, seeds: int, leader: bool = False,
             max_ticks: int | None = None) -> dict:
    """Episodes of one (layout, task, team) cell; means over all seeds. ``leader``: under
    the ``leader`` organization's rules (:func:`everyone_hears_everyone`)."""
    env = HighLevelEnv(layout=layout, task=task, num_agents=num_agents, max_ticks=max_ticks)
    org = everyone_hears_everyone(load_organization("leader")) if leader else None
    results, orders, followed = [], 0, 0
    start = time.perf_counter()
    for seed in range(seeds):
        agents = [PlannerAgent(f"agent_{i}", "leader" if leader and i == 0 else "member")
                  for i in range(num_agents)]
        said: list = []
        decided: list = []
        results.append(run_team(env, agents, seed=seed, organization=org, messages=said,
                                decisions=decided))
        n, k = orders_followed(said, decided)
        orders, followed = orders + n, followed + k
    ticks = [r["ticks"] for r in results]
    return {"layout": layout, "task": task, "agents": num_agents, "leader": leader,
            "seeds": seeds, "mean_ticks": statistics.fmean(ticks), "max_ticks": max(ticks),
            "success_rate": sum(r["success"] for r in results) / seeds,
            "mean_rounds": statistics.fmean(r["rounds"] for r in results),
            "mean_messages": statistics.fmean(r["messages"] for r in results),
            "orders": orders, "orders_followed": followed,
            "limit": env.world.scene.step_limit if max_ticks is None else max_ticks,
            "seconds": time.perf_counter() - start}


def orders_followed(messages: list, decisions: list) -> tuple[int, int]:
    """How many ``assign`` orders were said, and how many of them the agent ordered
    then did: its decision in the order's round was the ordered action."""
    done = {(rnd, agent, action) for _, rnd, agent, action in decisions}
    orders = [m for m in messages if m.kind == "assign"]
    return len(orders), sum((m.round, m.content["agent"], m.content["action"]) in done
                            for m in orders)


def table(seeds: int, sizes: list[int], leader: bool, layouts=LAYOUTS) -> list[dict]:
    rows = []
    for task in list_tasks():
        for layout in layouts:
            for n in sizes:
                rows.append(run_cell(layout, task, n, seeds))
            if leader:
                rows.append(run_cell(layout, task, max(sizes), seeds, leader=True))
    return rows


def markdown(rows: list[dict]) -> str:
    """One line per (task, layout): mean ticks (success rate) per team column."""
    cols = sorted({(r["agents"], r["leader"]) for r in rows})
    head = ["task", "layout", "limit"] + [f"{n} planner{'s' if n > 1 else ''}"
                                          f"{' (leader)' if lead else ''}" for n, lead in cols]
    lines = [markdown_row(*head), markdown_rule("l" * len(head))]
    cells = {(r["task"], r["layout"], r["agents"], r["leader"]): r for r in rows}
    for task, layout in dict.fromkeys((r["task"], r["layout"]) for r in rows):
        out = [task, layout, str(cells[(task, layout, *cols[0])]["limit"])]
        for n, lead in cols:
            r = cells[(task, layout, n, lead)]
            out.append(f"{r['mean_ticks']:.1f} ({r['success_rate']:.0%})")
        lines.append(markdown_row(*out))
    return "\n".join(lines)


def derive_limits(seeds: int) -> dict[str, dict[str, int]]:
    limits: dict[str, dict[str, int]] = {}
    for task in list_tasks():
        for layout in LAYOUTS:
            worst = run_cell(layout, task, 1, seeds, max_ticks=100_000)["max_ticks"]
            limits.setdefault(task, {})[layout] = int(math.ceil(LIMIT_FACTOR * worst / 10) * 10)
    return limits


def write_limits(limits: dict[str, dict[str, int]], seeds: int) -> None:
    """Replace (or append) the ``step_limits`` block of each task file."""
    for task, per_layout in limits.items():
        path = asset_dir("tasks", f"{task}.yaml")
        text = path.read_text()
        text = re.sub(r"(?m)^# step_limits:.*\n(#.*\n)*", "", text)
        text = re.sub(r"(?m)^step_limits:.*\n(  .*\n)*", "", text)
        block = (f"# step_limits: {LIMIT_FACTOR}x the worst ticks of one PlannerAgent over "
                 f"seeds 0-{seeds - 1}\n# per layout (benchmarks/teams/planner_table.py "
                 f"--derive-limits), rounded up to 10.\nstep_limits:\n"
                 + "".join(f"  {k}: {v}\n" for k, v in per_layout.items()))
        path.write_text(text.rstrip("\n") + "\n" + block)


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--seeds", type=int, default=20)
    options.add_argument("--sizes", type=int, nargs="+", default=[1, 3])
    options.add_argument("--layouts", nargs="+", default=list(LAYOUTS))
    options.add_argument("--leader", action="store_true")
    options.add_argument("--markdown", action="store_true")
    options.add_argument("--json", action="store_true")
    options.add_argument("--derive-limits", action="store_true")
    options.add_argument("--write", action="store_true")
    args = options.parse_args()
    if args.derive_limits:
        limits = derive_limits(args.seeds)
        print(json.dumps(limits, indent=1))
        if args.write:
            write_limits(limits, args.seeds)
        return
    start = time.perf_counter()
    rows = table(args.seeds, args.sizes, args.leader, args.layouts)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(markdown(rows))
    led = [r for r in rows if r["leader"]]
    if led:
        print(f"\nleader column: {sum(r['orders'] for r in led)} orders said, "
              f"{sum(r['orders_followed'] for r in led)} followed in the order's round")
    print(f"\n{len(rows)} cells x {args.seeds} seeds in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
