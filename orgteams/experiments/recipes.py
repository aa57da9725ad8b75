"""Paper experiments as one command each: recipes in ``assets/experiments/<name>.yaml``.

A recipe is data: ``kind: sweep`` (a sweep spec, a baseline organization, the metrics
of its table, and with ``behaviours: true`` each organization's shares of the
rule-based message labels of :mod:`orgteams.experiments.behaviours`) or ``kind: reflect``
(Criticize-Reflect variants, each evaluated best vs start on held-out seeds).
:func:`run_experiment` runs one and writes into ``out``: ``spec.yaml`` (exactly what
ran, after ``--backend``/``--seeds``), ``table.md`` and ``table.json`` (its table) and
plots (``report.md``/``report.json`` with Welch tests for sweeps; ``<variant>/costs.png``
for reflect runs).

>>> from orgteams.experiments.recipes import run_experiment
>>> run_experiment("paper2-protocols", backend="planner", seeds=3, out="runs/protocols")
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any

import yaml

from orgteams.assets import asset_dir
from orgteams.errors import UserError, unknown_name

__all__ = ["coordinator_input", "list_experiments", "load_recipe", "run_experiment"]

KINDS = ("sweep", "reflect", "shocks")


def _recipes() -> dict[str, Path]:
    folder = asset_dir("experiments")
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def list_experiments() -> list[tuple[str, str]]:
    """``(name, description)`` of every shipped recipe."""
    return [(name, str(load_recipe(name).get("description", ""))) for name in _recipes()]


def load_recipe(name: str) -> dict[str, Any]:
    """A recipe by name; an unknown name or a malformed recipe is one clear line."""
    recipes = _recipes()
    if name not in recipes:
        raise unknown_name("experiment", name, list(recipes))
    path = recipes[name]
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise UserError(f"{path}: field 'kind' must be one of {', '.join(KINDS)}")
    return data


def run_experiment(name: str, *, backend: str | None = None, seeds: int | None = None,
                   out: str | Path | None = None, progress: bool = True,
                   agents: list[int] | None = None) -> dict[str, Any]:
    """Run recipe ``name``; ``backend`` replaces its member spec, ``seeds`` its seed count
    (for reflect recipes: the held-out seeds), ``agents`` its team sizes (sweep recipes:
    e.g. ``paper2-scaling`` at small sizes). Returns the table as JSON."""
    recipe = load_recipe(name)
    if seeds is not None and seeds < 1:
        raise UserError(f"seeds must be >= 1, got {seeds}")
    if agents is not None and recipe["kind"] != "sweep":
        raise UserError(f"experiment {name!r}: agents= replaces the team sizes of sweep "
                        f"recipes; this one is kind {recipe['kind']!r}")
    out_dir = Path(out or f"runs/experiments/{name}")
    out_dir.mkdir(parents=True, exist_ok=True)
    if recipe["kind"] == "sweep":
        if agents is not None:
            recipe["sweep"] = {**(recipe.get("sweep") or {}), "agents": list(agents)}
        table = _run_sweep(name, recipe, backend, seeds, out_dir, progress)
    elif recipe["kind"] == "shocks":
        table = _run_shocks(name, recipe, backend, seeds, out_dir, progress)
    else:
        table = _run_reflect(name, recipe, backend, seeds, out_dir, progress)
    (out_dir / "table.json").write_text(json.dumps(table, indent=2, default=str) + "\n",
                                        encoding="utf-8")
    (out_dir / "table.md").write_text(_markdown(table) + "\n", encoding="utf-8")
    return table


def _run_sweep(name: str, recipe: dict[str, Any], backend: str | None, seeds: int | None,
               out: Path, progress: bool) -> dict[str, Any]:
    from orgteams.experiments.report import report
    from orgteams.experiments.sweep import played, read_results, run_sweep
    from orgteams.experiments.sweep_spec import SweepSpec

    data = dict(recipe.get("sweep") or {})
    if backend is not None:
        data["backends"] = [backend]
    if seeds is not None:
        data["seeds"] = seeds
    spec = SweepSpec.from_dict(data, source=f"experiment {name}")
    (out / "spec.yaml").write_text(yaml.safe_dump(spec.to_dict(), sort_keys=False),
                                   encoding="utf-8")
    run_sweep(spec, out, workers=1, progress=progress)
    report(out / "results.jsonl", out, baseline=recipe.get("baseline"), progress=progress)
    rows, _ = read_results(out / "results.jsonl")
    metrics = list(recipe.get("metrics") or ["ticks", "comm_tokens_per_step"])
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        c = row["cell"]
        key = (c["task"], c["layout"], c["agents"], c["backend"], c["organization"])
        groups.setdefault(key, []).append(row)
    behaviours = bool(recipe.get("behaviours"))
    if behaviours:
        from orgteams.experiments.behaviours import LABELS, episodes_label_shares
    shares = [f"share_{label}" for label in LABELS] if behaviours else []
    columns = ["task", "layout", "agents", "backend", "organization", "n", "errors",
               "success_rate", *metrics, *(["messages", *shares] if behaviours else [])]
    out_rows = []
    for key, group in groups.items():
        ok = [r["summary"] for r in group if played(r)]
        entry: dict[str, Any] = dict(zip(columns[:5], key, strict=True))
        entry.update(n=len(ok), errors=len(group) - len(ok),
                     success_rate=fmean(bool(s.get("success")) for s in ok) if ok else None)
        for m in metrics:
            values = [float(s[m]) for s in ok if isinstance(s.get(m), int | float)]
            entry[m] = fmean(values) if values else None
        if behaviours:  # rule-based labels of every message the group's episodes sent
            found = episodes_label_shares(ok, log_dir=out / "logs")
            entry["messages"] = found["n"]
            entry.update({f"share_{k}": v for k, v in found["shares"].items()})
        out_rows.append(entry)
    return {"experiment": name, "kind": "sweep", "description": recipe.get("description"),
            "columns": columns, "rows": out_rows, "report": str(out / "report.md")}


def _run_reflect(name: str, recipe: dict[str, Any], backend: str | None, seeds: int | None,
                 out: Path, progress: bool) -> dict[str, Any]:
    from orgteams.cli.progress import Progress
    from orgteams.experiments.reflect import run_reflect
    from orgteams.experiments.reflect_eval import evaluate_reflect

    common = {k: recipe[k] for k in ("task", "layout", "agents", "critic", "coordinator",
                                     "iterations", "episodes_per_iteration") if k in recipe}
    common["backend"] = backend or recipe.get("backend", "planner")
    n = seeds or int(recipe.get("heldout_seeds", 20))
    ran = {"organization": recipe.get("organization", "leader"), **common, "heldout_seeds": n,
           "variants": recipe.get("variants") or {"default": {}}}
    configs = _reflect_configs(name, ran, common, out)  # every variant, before any plays
    (out / "spec.yaml").write_text(yaml.safe_dump(ran, sort_keys=False), encoding="utf-8")
    columns = ["variant", "coordinator_input", "start", "best", "best_iteration", "path",
               "loop_costs", "loop_cost_start", "loop_cost_best", "n", "heldout_start",
               "heldout_best", "difference", "cohens_dz", "t_test_p", "wilcoxon_p"]
    rows = []
    for variant, config in configs.items():
        bar = Progress(config.iterations, f"{name} {variant}", enabled=progress)

        def on_progress(iteration: int, tick: int, limit: int, bar: Progress = bar,
                        total: int = config.iterations) -> None:
            bar.update(iteration, f"iteration {iteration + 1}/{total}: tick {tick}/{limit}")

        try:
            result = run_reflect(config, on_progress=on_progress)
            bar.update(config.iterations, "done")
        finally:
            bar.close()
        ev = evaluate_reflect(out / variant, seeds=n, progress=progress)["rows"][0]
        rows.append({"variant": variant, "coordinator_input": coordinator_input(result.history),
                     "start": ran["organization"], "best": result.best.name,
                     "best_iteration": result.best_iteration,
                     "path": " > ".join(_edit_of(r["organization_name"])
                                        for r in result.history),
                     "loop_costs": ", ".join(f"{r['cost']:.2f}" for r in result.history),
                     "loop_cost_start": result.history[0]["cost"],
                     "loop_cost_best": result.best_cost, "n": ev["n"],
                     "heldout_start": ev["mean_start"], "heldout_best": ev["mean_best"],
                     "difference": ev["mean_difference"], "cohens_dz": ev["cohens_dz"],
                     "t_test_p": ev["t_test_p"], "wilcoxon_p": ev["wilcoxon_p"]})
    return {"experiment": name, "kind": "reflect", "description": recipe.get("description"),
            "columns": columns, "rows": rows}


def _reflect_configs(name: str, ran: dict[str, Any], common: dict[str, Any], out: Path
                     ) -> dict[str, Any]:
    """Each variant's :class:`~orgteams.config.ReflectConfig` (the recipe's fields, the
    variant's changes, seeds ``0..E-1`` unless given), checked as ``run_reflect`` checks;
    a bad value names the experiment, the variant and the field."""
    from orgteams.config import ReflectConfig

    configs = {}
    for variant, options in ran["variants"].items():
        per = {**common, **(options or {})}
        per.setdefault("seeds", list(range(int(per.get("episodes_per_iteration") or 1))))
        configs[variant] = ReflectConfig.build(
            {"organization": ran["organization"], **per, "out_dir": out / variant},
            lambda field, v=variant: f"experiment {name!r} variant {v!r} field {field!r}")
    return configs


def _edit_of(name: str) -> str:
    """``leader__channels_none`` -> ``channels_none`` (the heuristic's edit slug)."""
    return name.split("__", 1)[1] if "__" in name else name


def coordinator_input(history: list[dict[str, Any]]) -> str:
    """What the Coordinator received from the Critic over a run: how many of its
    decisions had a usable critique, and the problem codes those critiques named (a
    heuristic Critic's), or that it decided on costs and metrics alone."""
    decided = [r for r in history if r.get("decision") is not None]
    used = [r["critique"] for r in decided
            if r.get("critique") and not r["critique"].get("fallback")]
    if not used:
        return f"no critique in {len(decided)} decision(s): costs and metrics only"
    codes: dict[str, int] = {}
    for critique in used:
        for code in critique.get("codes") or []:
            codes[code] = codes.get(code, 0) + 1
    named = ", ".join(f"{c} x{k}" for c, k in codes.items()) or "no problem codes"
    return f"critique in {len(used)}/{len(decided)} decision(s): {named}"


def _run_shocks(name: str, recipe: dict[str, Any], backend: str | None, seeds: int | None,
                out: Path, progress: bool) -> dict[str, Any]:
    """Every organization under every shock condition (``orgteams run --shock`` strings or
    mappings, as in a sweep spec's ``shocks``), once per seed: success, ticks and recovery
    (docs/shocks.md; a shock that did not recover is counted, never averaged)."""
    from orgteams.experiments.sweep import _Progress
    from orgteams.experiments.sweep_spec import SweepSpec, cell_config
    from orgteams.organizations.rounds.shocks import recovery_summary
    from orgteams.run import run_episode

    missing = [k for k in ("task", "layout", "agents", "organizations", "conditions")
               if k not in recipe]
    if missing:
        raise UserError(f"experiment {name!r}: recipe field {missing[0]!r} is missing")
    where = f"experiment {name!r} recipe"
    spec = SweepSpec.from_dict({
        "tasks": [recipe["task"]], "layouts": [recipe["layout"]],
        "organizations": recipe["organizations"], "agents": [recipe["agents"]],
        "backends": [backend or recipe.get("backend", "planner")],
        "seeds": seeds or int(recipe.get("seeds", 5)), "shocks": recipe["conditions"]},
        source=where)
    try:
        spec.validate()  # every shock against every organization, before any episode
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    ran = {"task": recipe["task"], "layout": recipe["layout"], "agents": recipe["agents"],
           "organizations": list(spec.organizations),
           "conditions": {k: list(v) for k, v in spec.shocks.items()},
           "backend": spec.backends[0], "seeds": list(spec.seeds)}
    (out / "spec.yaml").write_text(yaml.safe_dump(ran, sort_keys=False), encoding="utf-8")
    columns = ["organization", "condition", "n", "success_rate", "ticks", "shocks_applied",
               "recovered", "not_recovered", "recovery_rounds"]
    cells = list(spec.cells())
    options = spec.episode_options()
    bar = _Progress(len(cells), progress)
    found: dict[tuple[str, str], list[dict]] = {}
    for cell in cells:
        result = run_episode(config=cell_config(cell, None, options))
        found.setdefault((cell["organization"], cell["shocks"]), []).append(result.summary)
        bar.update({"key": f"{cell['organization']}|{cell['shocks']}|{cell['seed']}",
                    "status": "ok"})
    bar.close()
    rows = []
    for (org, condition), summaries in found.items():
        rec = recovery_summary(summaries) or {}
        rows.append({"organization": org, "condition": condition, "n": len(summaries),
                     "success_rate": fmean(bool(s.get("success")) for s in summaries),
                     "ticks": fmean(float(s["ticks"]) for s in summaries),
                     "shocks_applied": rec.get("applied", 0),
                     "recovered": rec.get("recovered", 0),
                     "not_recovered": rec.get("not_recovered", 0),
                     "recovery_rounds": rec.get("mean_rounds")})
    return {"experiment": name, "kind": "shocks", "description": recipe.get("description"),
            "columns": columns, "rows": rows}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 0.01 else f"{value:.2f}"
    return "-" if value is None else str(value)


def _markdown(table: dict[str, Any]) -> str:
    cols = table["columns"]
    lines = [f"# {table['experiment']}", "", str(table.get("description") or ""), "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in cols) + " |" for r in table["rows"]]
    return "\n".join(lines)
