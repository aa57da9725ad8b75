"""Evaluate a reflect run: its ``best.yaml`` against the starting organization on held-out
seeds (paired: the same seed gives both the same house and goal), and plot its costs.

>>> from orgteams.experiments.reflect_eval import evaluate_reflect, format_evaluation
>>> print(format_evaluation(evaluate_reflect("runs/reflect_leader", seeds=20)))
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

from orgteams.cli.progress import Progress
from orgteams.config import EpisodeConfig
from orgteams.criticize_reflect.cost import CostModel
from orgteams.errors import UserError
from orgteams.organizations.spec.organization import Organization

__all__ = ["HELDOUT_OFFSET", "evaluate_reflect", "format_evaluation", "heldout_seeds",
           "paired_comparison", "plot_costs"]

HELDOUT_OFFSET = 100_000
"""Held-out seeds start this far above the largest seed the loop played."""


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
    from scipy import stats

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


def _costs(episode: EpisodeConfig, seeds: list[int], model: CostModel, bar: Progress,
           logs: Path, pool: Any = None) -> list[float]:
    """The cost of ``episode`` on each seed; logs at ``<logs>_s<seed>.jsonl``.

    Raises:
        BudgetReached: ``pool``'s spend reached its budget (an episode was stopped).
        RuntimeError: An episode stopped early for another reason.
    """
    from orgteams.run import run_episode

    where = f"{episode.task} / {episode.layout}: {episode.organization.name}"
    costs = []
    for seed in seeds:
        bar.update(bar.done, f"{where}, seed {seed}")
        # the evidence stays with the run it evaluates, never in the caller's ./runs
        result = run_episode(episode, seed=seed, log_path=f"{logs}_s{seed}.jsonl", pool=pool)
        if result.summary.get("episode_status", "complete") != "complete":
            from orgteams.organizations.rounds.status import why_stopped

            if pool is not None and pool.spend is not None:
                pool.spend.check()  # the budget stopped it: the evaluation is played again

            raise RuntimeError(f"seed {seed}: the episode stopped early "
                               f"({why_stopped(result.summary)}); no comparison")
        costs.append(model.cost(result.summary))
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


def evaluate_reflect(out_dir: str | Path, seeds: int = 20,
                     tasks: Sequence[str] | None = None, layouts: Sequence[str] | None = None,
                     progress: bool = False, pool: Any = None) -> dict[str, Any]:
    """Compare ``best.yaml`` with the starting organization on ``seeds`` held-out seeds,
    per task x layout (default: the run's own; a pair the layout cannot host is a
    skipped row when tasks or layouts were asked for); writes ``evaluation.json`` and the cost
    plot ``costs.png`` into ``out_dir``. ``progress``: a bar on stderr over the episodes;
    ``pool``: the episodes' backends (a recipe's, metered by its budget; None: each
    episode makes its own).

    Raises:
        BudgetReached: ``pool``'s spend reached its budget; nothing is written.
    """
    out, run, config, start, best = _load(out_dir)
    model = CostModel(config["step_weight"], config["token_weight"],
                      config.get("failure_penalty", 0.0))
    train = list(run["seeds"])
    held = heldout_seeds(train, seeds)

    def one(value: str | list[str]) -> list[str]:
        return [value] if isinstance(value, str) else list(value)

    rows = []
    cells = [(t, lay) for t in tasks or one(run["task"]) for lay in layouts or one(run["layout"])]
    bar = Progress(2 * len(held) * len(cells), f"evaluating {out.name}", enabled=progress)
    try:
        for task, layout in cells:
            before = bar.done
            episode = EpisodeConfig(task=task, layout=layout, agents=run["agents"],
                                    backend=run["backend"], max_rounds=run.get("max_rounds"),
                                    max_ticks=run.get("max_ticks"))
            logs = out / "evaluation" / f"{task}_{layout}"
            try:
                a = _costs(episode.replace(organization=start), held, model, bar,
                           Path(f"{logs}_start"), pool)
            except UserError as exc:  # e.g. the layout lacks the task's furniture
                if not (tasks or layouts):
                    raise
                rows.append({"task": task, "layout": layout, "n": 0, "skipped": str(exc)})
                bar.update(before + 2 * len(held), "skipped")
                continue
            b = _costs(episode.replace(organization=best), held, model, bar,
                       Path(f"{logs}_best"), pool)
            rows.append({"task": task, "layout": layout, **paired_comparison(a, b),
                         "start_costs": a, "best_costs": b})
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
