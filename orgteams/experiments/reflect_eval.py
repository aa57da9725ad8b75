"""Evaluate a reflect run: its ``best.yaml`` against the starting organization on held-out
seeds (paired: the same seed gives both the same house and goal), and plot its costs.

Each finished held-out episode's cost is kept in ``<run>/evaluation/episodes.jsonl`` (by
task, layout, arm, the arm's organization, seed and cost model), so an evaluation its
budget stopped (``max_cost``: a line ``{"stop": "max cost", ...}`` is added there) goes
on where it stopped when run again, without replaying a finished episode.

>>> from orgteams.experiments.reflect_eval import evaluate_reflect, format_evaluation
>>> print(format_evaluation(evaluate_reflect("runs/reflect_leader", seeds=20)))
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

from orgteams.cli.progress import Progress
from orgteams.config import EpisodeConfig
from orgteams.criticize_reflect.cost import CostModel
from orgteams.errors import UserError
from orgteams.experiments.stats import scipy_stats
from orgteams.organizations.spec.organization import Organization

__all__ = ["EPISODES", "HELDOUT_OFFSET", "evaluate_reflect", "evaluation_episodes",
           "evaluation_spend", "format_evaluation", "heldout_seeds", "paired_comparison",
           "plot_costs"]

HELDOUT_OFFSET = 100_000
"""Held-out seeds start this far above the largest seed the loop played."""
EPISODES = "episodes.jsonl"
"""The finished held-out episodes' costs (and budget stops), under ``<run>/evaluation/``."""


def heldout_seeds(train: Sequence[int], n: int) -> list[int]:
    """``n`` seeds none of which the loop saw (``train``)."""
    start = max(train, default=0) + HELDOUT_OFFSET
    seeds = list(range(start, start + n))
    if set(seeds) & set(train):  # pragma: no cover - guarded by construction
        raise RuntimeError("held-out seeds overlap the loop's")
    return seeds


def paired_comparison(start: Sequence[float], best: Sequence[float]) -> dict[str, Any]:
    """Paired t-test and Wilcoxon signed-rank of ``best - start`` per seed, with Cohen's
    d_z (mean difference over the differences' standard deviation)."""
    stats = scipy_stats()
    diffs = [b - s for s, b in zip(start, best, strict=True)]
    sd = stdev(diffs) if len(diffs) > 1 else 0.0
    out: dict[str, Any] = {"n": len(diffs), "mean_start": fmean(start),
                           "mean_best": fmean(best), "mean_difference": fmean(diffs),
                           "cohens_dz": fmean(diffs) / sd if sd else None}
    if len(diffs) > 1 and sd:
        out["t_test_p"] = float(stats.ttest_rel(best, start).pvalue)
        out["wilcoxon_p"] = float(stats.wilcoxon(diffs).pvalue) if any(diffs) else 1.0
    else:
        out["t_test_p"] = out["wilcoxon_p"] = None
    return out


class _Finished:
    """The held-out episodes an earlier evaluation of the run finished (``EPISODES``): their
    costs by key, and the file new ones and budget stops are appended to."""

    def __init__(self, path: Path, model: CostModel) -> None:
        self.path, self.model = path, model.to_dict()
        self.costs: dict[str, float] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    if row.get("cost_model") == self.model and "key" in row:
                        self.costs[str(row["key"])] = float(row["cost"])
                except (ValueError, TypeError, KeyError, AttributeError):
                    continue  # a line cut off by a kill: that episode is played again

    def _append(self, row: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")

    def add(self, key: str, seed: int, cost: float) -> None:
        """Keep one finished episode's cost."""
        self.costs[key] = cost
        self._append({"key": key, "seed": seed, "cost": cost, "cost_model": self.model,
                      "finished_at": _now()})

    def stop(self, stop: Any) -> None:
        """Record that the budget stopped the evaluation (a :class:`BudgetReached`)."""
        from orgteams.agents.backends.spend import MAX_COST

        self._append({"stop": MAX_COST, "detail": stop.line(), "spent_usd": stop.spent,
                      "max_cost": stop.max_cost, "finished_at": _now()})


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _key(task: str, layout: str, arm: str, org: Organization, seed: int) -> str:
    """One held-out episode: its cell, arm, seed and the arm's organization (its YAML's
    digest: a reflect run resumed later may have another best)."""
    digest = hashlib.sha256(org.to_yaml().encode("utf-8")).hexdigest()[:16]
    return f"{task}|{layout}|{arm}|{digest}|{seed}"


def _costs(episode: EpisodeConfig, arm: str, seeds: list[int], model: CostModel,
           bar: Progress, logs: Path, finished: _Finished, pool: Any = None) -> list[float]:
    """The cost of ``episode`` on each seed (those ``finished`` holds are not played
    again); logs at ``<logs>_s<seed>.jsonl``.

    Raises:
        BudgetReached: ``pool``'s spend reached its budget (before an episode, or it
            stopped one).
        RuntimeError: An episode stopped early for another reason.
    """
    from orgteams.run import run_episode

    where = f"{episode.task} / {episode.layout}: {episode.organization.name}"
    spend = pool.spend if pool is not None else None
    costs = []
    for seed in seeds:
        key = _key(episode.task, episode.layout, arm, episode.organization, seed)
        if key in finished.costs:  # an earlier evaluation of the run played it
            costs.append(finished.costs[key])
            bar.update(bar.done + 1, where)
            continue
        if spend is not None:  # spent already: no model call
            spend.check()
        bar.update(bar.done, f"{where}, seed {seed}")
        # the evidence stays with the run it evaluates, never in the caller's ./runs
        result = run_episode(episode, seed=seed, log_path=f"{logs}_s{seed}.jsonl", pool=pool)
        if not result.summary.complete:
            from orgteams.organizations.rounds.status import why_stopped

            if spend is not None:
                spend.check()  # the budget stopped it: a rerun plays it again

            raise RuntimeError(f"seed {seed}: the episode stopped early "
                               f"({why_stopped(result.summary)}); no comparison")
        costs.append(model.cost(result.summary))
        finished.add(key, seed, costs[-1])
        bar.update(bar.done + 1, where)
    return costs


def _load(out_dir: str | Path) -> tuple[Path, dict, dict, Organization, Organization]:
    out = Path(out_dir)
    for name in ("run.json", "config.json", "best.yaml"):
        if not (out / name).is_file():
            raise UserError(f"{out}: no {name}; run `orgteams reflect --out {out}` first")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    start = Organization.from_dict(config["initial_organization"], source=str(out))
    best = Organization.from_yaml(out / "best.yaml")
    return out, run, config, start, best


def _one(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _cells(run: dict, tasks: Sequence[str] | None, layouts: Sequence[str] | None
           ) -> list[tuple[str, str]]:
    """Every task x layout asked for; an unknown name is one line here (it was a
    "skipped" row, as a layout that cannot host a task is, and exit 0)."""
    from orgteams.envs.core.layout import load_layout
    from orgteams.envs.core.tasks import load_task

    for flag, names, load in (("--eval-tasks", tasks, load_task),
                              ("--eval-layouts", layouts, load_layout)):
        for name in names or ():
            try:
                load(name)
            except (UserError, FileNotFoundError) as exc:
                raise UserError(f"{flag}: {exc}") from None
    return [(t, lay) for t in tasks or _one(run["task"]) for lay in layouts or _one(run["layout"])]


def _episode(run: dict, task: str, layout: str) -> EpisodeConfig:
    """A held-out episode of the run's team (its backend, size and limits) on a cell."""
    return EpisodeConfig(task=task, layout=layout, agents=run["agents"], backend=run["backend"],
                         max_rounds=run.get("max_rounds"), max_ticks=run.get("max_ticks"))


def evaluation_episodes(out_dir: str | Path, seeds: int = 20,
                        tasks: Sequence[str] | None = None,
                        layouts: Sequence[str] | None = None
                        ) -> tuple[list[list[EpisodeConfig]], int]:
    """The held-out episodes :func:`evaluate_reflect` would play now, per cell (task x
    layout: the start's and the best's on each seed not finished before), and how many
    an earlier evaluation finished (what a cost estimate leaves out)."""
    out, run, config, start, best = _load(out_dir)
    model = CostModel(config["step_weight"], config["token_weight"],
                      config.get("failure_penalty", 0.0))
    finished = _Finished(out / "evaluation" / EPISODES, model)
    held = heldout_seeds(list(run["seeds"]), seeds)
    todo, done = [], 0
    for task, layout in _cells(run, tasks, layouts):
        cell = []
        for arm, org in (("start", start), ("best", best)):
            for seed in held:
                if _key(task, layout, arm, org, seed) in finished.costs:
                    done += 1
                else:
                    cell.append(_episode(run, task, layout).replace(organization=org,
                                                                    seed=seed))
        todo.append(cell)
    return todo, done


def evaluation_spend(out_dir: str | Path, max_cost: float | None = None,
                     price: Any = None) -> Any:
    """The :class:`~orgteams.agents.backends.spend.Spend` of evaluating a reflect run
    (the run's ledger ``<out_dir>/spend.json``: the loop's spend counts against the
    budget too), or None when the run's team has no priced model and there is no
    ``max_cost``.

    Raises:
        UserError: ``max_cost`` with a model that has no known price, or no reflect run
            in ``out_dir``.
    """
    from orgteams.agents.backends.spend import LEDGER, Spend, check_priced, run_models

    out, run, _, _, _ = _load(out_dir)
    priced = check_priced(run_models(_one(run["backend"])), price, max_cost)
    if not (priced or max_cost is not None):
        return None
    return Spend(max_cost, out / LEDGER, price)


def evaluate_reflect(out_dir: str | Path, seeds: int = 20,
                     tasks: Sequence[str] | None = None, layouts: Sequence[str] | None = None,
                     progress: bool = False, pool: Any = None) -> dict[str, Any]:
    """Compare ``best.yaml`` with the starting organization on ``seeds`` held-out seeds,
    per task x layout (default: the run's own; a pair the layout cannot host is a
    skipped row when tasks or layouts were asked for); writes ``evaluation.json`` and the cost
    plot ``costs.png`` into ``out_dir``. ``progress``: a bar on stderr over the episodes;
    ``pool``: the episodes' backends (metered by its budget when it has a
    :class:`~orgteams.agents.backends.spend.Spend`; None: each episode makes its own).
    Episodes an earlier evaluation of the run finished are not played again
    (``evaluation/episodes.jsonl``).

    Raises:
        MissingExtraError: scipy (the ``report`` extra) is not installed, before any
            episode.
        BudgetReached: ``pool``'s spend reached its budget (``done``: the held-out
            episodes finished, kept for a rerun); the stop is recorded in
            ``evaluation/episodes.jsonl``, ``evaluation.json`` is not written.
    """
    from orgteams.agents.backends.spend import BudgetReached

    out, run, config, start, best = _load(out_dir)
    scipy_stats()  # before any episode: without the report extra it was a traceback after
    model = CostModel(config["step_weight"], config["token_weight"],
                      config.get("failure_penalty", 0.0))
    train = list(run["seeds"])
    held = heldout_seeds(train, seeds)
    finished = _Finished(out / "evaluation" / EPISODES, model)

    rows = []
    cells = _cells(run, tasks, layouts)
    planned = {_key(t, lay, arm, org, s) for t, lay in cells
               for arm, org in (("start", start), ("best", best)) for s in held}
    bar = Progress(2 * len(held) * len(cells), f"evaluating {out.name}", enabled=progress)
    try:
        for task, layout in cells:
            before = bar.done
            episode = _episode(run, task, layout)
            logs = out / "evaluation" / f"{task}_{layout}"
            try:
                a = _costs(episode.replace(organization=start), "start", held, model, bar,
                           Path(f"{logs}_start"), finished, pool)
            except UserError as exc:  # e.g. the layout lacks the task's furniture
                if not (tasks or layouts):
                    raise
                rows.append({"task": task, "layout": layout, "n": 0, "skipped": str(exc)})
                bar.update(before + 2 * len(held), "skipped")
                continue
            b = _costs(episode.replace(organization=best), "best", held, model, bar,
                       Path(f"{logs}_best"), finished, pool)
            rows.append({"task": task, "layout": layout, **paired_comparison(a, b),
                         "start_costs": a, "best_costs": b})
    except BudgetReached as stop:
        done = len(planned & finished.costs.keys())
        stopped = BudgetReached(stop.spent, stop.max_cost, stop.ledger,
                                f"{done} of {len(planned)} held-out episodes")
        finished.stop(stopped)
        raise stopped from None
    finally:
        bar.close()
    report = {"out_dir": str(out), "start": start.name, "best": best.name,
              "train_seeds": train, "heldout_seeds": held, "cost_model": model.to_dict(),
              "rows": rows}
    (out / "evaluation.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    try:
        report["plot"] = str(plot_costs(out))
    except ImportError:  # matplotlib is the plots extra
        report["plot"] = None
    return report


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}" if isinstance(value, float) and abs(value) < 0.01 \
        else f"{value:.{digits}f}"


def format_evaluation(report: dict[str, Any]) -> str:
    """A markdown table of :func:`evaluate_reflect`'s comparison."""
    lines = [f"start {report['start']} vs best {report['best']}, {len(report['heldout_seeds'])} "
             f"held-out seeds {report['heldout_seeds'][0]}..{report['heldout_seeds'][-1]} "
             f"(the loop's: {report['train_seeds']})", "",
             "| task | layout | n | start cost | best cost | difference | d_z | paired t p "
             "| Wilcoxon p |", "|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        if r.get("skipped"):
            lines.append(f"| {r['task']} | {r['layout']} | 0 | skipped: {r['skipped'][:80]} "
                         "| | | | | |")
            continue
        lines.append(f"| {r['task']} | {r['layout']} | {r['n']} | {_fmt(r['mean_start'])} | "
                     f"{_fmt(r['mean_best'])} | {_fmt(r['mean_difference'])} | "
                     f"{_fmt(r['cohens_dz'])} | {_fmt(r['t_test_p'], 3)} | "
                     f"{_fmt(r['wilcoxon_p'], 3)} |")
    return "\n".join(lines)


def plot_costs(out_dir: str | Path) -> Path:
    """``costs.png``: per iteration, every screened candidate's cost, the played one's,
    and the best so far."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    rows = [json.loads(line) for line in (out / "history.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [r["iteration"] for r in rows]
    played = [r["cost"] for r in rows]
    for r in rows:
        for s in ((r.get("decision") or {}).get("screened") or []):
            if s.get("cost") is not None:
                ax.scatter(r["iteration"] + 1, s["cost"], color="0.6", s=12,
                           label="candidates" if "candidates" not in
                           ax.get_legend_handles_labels()[1] else None)
    ax.plot(xs, played, "o-", label="played")
    best = [min(played[: i + 1]) for i in range(len(played))]
    ax.step(xs, best, where="post", label="best so far")
    ax.set_xlabel("iteration")
    ax.set_ylabel("cost (mean over the iteration's seeds)")
    ax.legend()
    fig.tight_layout()
    path = out / "costs.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
