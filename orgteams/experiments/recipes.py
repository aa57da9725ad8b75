"""Paper experiments as one command each: recipes in ``assets/experiments/<name>.yaml``.

A recipe is data: ``kind: sweep`` (a sweep spec, a baseline organization, the metrics
of its table, a ``caption`` saying what its arms differ in besides the factor under
study, and with ``behaviours: true`` each organization's shares of the
rule-based message labels of :mod:`orgteams.experiments.behaviours`, overall and per
role) or ``kind: reflect``
(Criticize-Reflect variants, each evaluated best vs start on held-out seeds).
:func:`run_experiment` runs one and writes into ``out``: ``spec.yaml`` (exactly what
ran, after ``--backend``/``--seeds``), ``table.md`` and ``table.json`` (its table) and
plots (``report.md``/``report.json`` with Welch tests for sweeps; ``<variant>/costs.png``
for reflect runs).

A recipe's ``caption`` says what its planner version can and cannot show about the
paper's claim; it heads the table.

Teams: ``teams`` (the recipe's field, or ``run_experiment(teams=...)`` / ``--team
NAME=COMPOSITION``) gives each arm its own team composition, e.g. ``{"mixed": "1x
openai:gpt-4o + 2x openai:gpt-4o-mini"}`` (:func:`team_specs`): a sweep recipe plays every
arm (its table names the arm in ``team``), the other kinds play one. A sweep recipe with
``backend_list: true`` reads ``--backend a,b`` as a list of backends (each a whole team)
rather than one member spec per agent; ``contrast: [A, B]`` adds organization A against
B per backend (success, ticks with Welch's test, A's abstention rate) below its table,
and ``across_sizes: {metrics: [ticks], pair: [64, 256]}`` a Kruskal-Wallis test across
its team sizes per organization (over all, and over the pair).

Paid models: ``max_cost`` stops the recipe cleanly once its model calls' spend
(``out/spend.json``, every variant and the evaluation together, across reruns) reaches it
(:class:`~orgteams.agents.backends.spend.BudgetReached`); a rerun with a higher one goes
on: a sweep recipe without replaying its finished rows, a reflect recipe without its
finished iterations and evaluations. ``on_estimate(estimate, spend)`` is given the cost
estimate (:mod:`~orgteams.experiments.estimate`) before anything is played, when a model
of the recipe has a price.

>>> from orgteams.experiments.recipes import run_experiment
>>> run_experiment("paper2-protocols", backend="planner", seeds=3, out="runs/protocols")
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Any

import yaml

from orgteams.assets import asset_dir
from orgteams.errors import UserError, unknown_name
from orgteams.experiments.stats import scipy_stats
from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["coordinator_input", "list_experiments", "load_recipe", "run_experiment",
           "skipped_same_behaviour", "team_specs"]

KINDS = ("sweep", "reflect", "shocks", "generalize")
CELL = ("task", "layout", "agents", "backend", "organization")
"""A sweep table row's cell columns (a model-mix recipe's ``team`` comes before them)."""
NO_BUDGET = {"max_cost": None, "price_per_mtok": None, "on_estimate": None}
"""A recipe run without a budget or a price of its own (the price table)."""


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


def team_specs(composition: str, agents: int, where: str = "team",
               members: dict[str, str] | None = None) -> str:
    """A team composition as one member spec per agent (a comma list): ``"1x
    openai:gpt-4o + 2x openai:gpt-4o-mini"`` -> ``"openai:gpt-4o,openai:gpt-4o-mini,
    openai:gpt-4o-mini"``; a part without a count is one member; a comma list is taken as
    it is, and one spec alone (``"planner"``) is every member at any size. The members
    must add up to ``agents``. ``members``: names a composition may use for member specs
    (a recipe's ``members: {strong: planner, weak: random}`` for ``"1x strong + 2x weak"``).

    Raises:
        UserError: A part is no ``<count>x <member spec>``, a spec does not parse, or the
            counts do not add up (the line names ``where``).
    """
    import re

    from orgteams.agents.backends.pool import parse_member_spec

    text = str(composition).strip()
    counted = "+" in text or re.match(r"^\d+\s*x\s", text) is not None
    if not counted:
        specs = [p.strip() for p in text.split(",")]
    else:
        specs = []
        for part in text.split("+"):
            m = re.fullmatch(r"\s*(?:(\d+)\s*x\s+)?(\S+)\s*", part)
            if m is None or (m.group(1) is not None and int(m.group(1)) < 1):
                raise UserError(f"{where}: {part.strip()!r} is not '<count>x <member spec>' "
                                "(e.g. '1x openai:gpt-4o + 2x openai:gpt-4o-mini')")
            specs += [m.group(2)] * int(m.group(1) or 1)
    specs = [(members or {}).get(spec, spec) for spec in specs]
    for spec in specs:
        try:
            parse_member_spec(spec)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
    if len(specs) == 1 and not counted:  # one spec for every member, at any team size
        return specs[0]
    if len(specs) != agents:
        raise UserError(f"{where}: {composition!r} has {len(specs)} members; the recipe's "
                        f"team has {agents}")
    return ",".join(specs)


def _members(name: str, recipe: dict[str, Any], backend: str | None) -> dict[str, str]:
    """The recipe's member names (``members``), ``backend`` in place of the first one
    (``--backend`` replaces the recipe's member spec: for a model mix, its strong member)."""
    members = recipe.get("members") or {}
    if not isinstance(members, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in members.items()):
        raise UserError(f"experiment {name!r}: field 'members' must map names to member "
                        "specs such as {strong: planner, weak: random}")
    members = dict(members)
    if backend is not None and members:
        members[next(iter(members))] = backend
    return members


def _teams(name: str, recipe: dict[str, Any], teams: dict[str, str] | None,
           backend: str | None) -> dict[str, str] | None:
    """The arms' compositions (``teams=`` over the recipe's), checked: a mapping of names
    to compositions, not beside ``backend``. A recipe's own teams with ``backend`` and no
    ``members`` are replaced by ``backend``'s one team."""
    chosen = teams if teams is not None else recipe.get("teams")
    if chosen is None or (teams is None and backend is not None
                          and not recipe.get("members")):
        return None
    if not isinstance(chosen, dict) or not chosen or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in chosen.items()):
        raise UserError(f"experiment {name!r}: field 'teams' must map arm names to team "
                        "compositions such as '1x planner + 2x random'")
    if backend is not None and teams is not None:
        raise UserError(f"experiment {name!r}: give --backend or --team, not both")
    return dict(chosen)


def run_experiment(name: str, *, backend: str | None = None, seeds: int | None = None,
                   out: str | Path | None = None, progress: bool = True,
                   agents: list[int] | None = None, max_cost: float | None = None,
                   price_per_mtok: Any = None,
                   on_estimate: Callable[[Any, Any], object] | None = None,
                   teams: dict[str, str] | None = None,
                   max_rounds: int | None = None) -> dict[str, Any]:
    """Run recipe ``name``; ``backend`` replaces its member spec (a recipe with
    ``backend_list``: its list of backends, comma-separated), ``teams`` its arms' team
    compositions (:func:`team_specs`; not with ``backend``), ``seeds`` its seed count
    (for reflect recipes: the held-out seeds), ``agents`` its team sizes and
    ``max_rounds`` its round cap (sweep recipes: e.g. ``paper2-scaling`` at small sizes,
    a slow model for a few rounds; ``spec.yaml`` records what ran); ``max_cost``,
    ``price_per_mtok`` and ``on_estimate``: see the module docstring. Returns the table
    as JSON.

    Raises:
        BudgetReached: The spend reached ``max_cost`` (the finished work is kept).
    """
    from orgteams.config import EpisodeConfig

    budget = {"max_cost": EpisodeConfig.check("max_cost", max_cost),
              "price_per_mtok": EpisodeConfig.check("price_per_mtok", price_per_mtok),
              "on_estimate": on_estimate}
    recipe = load_recipe(name)
    scipy_stats()  # every recipe ends in a report: say so before its episodes, not after
    if seeds is not None and seeds < 1:
        raise UserError(f"seeds must be >= 1, got {seeds}")
    if agents is not None and recipe["kind"] != "sweep":
        raise UserError(f"experiment {name!r}: agents= replaces the team sizes of sweep "
                        f"recipes; this one is kind {recipe['kind']!r}")
    if max_rounds is not None and recipe["kind"] != "sweep":
        raise UserError(f"experiment {name!r}: max_rounds replaces the round cap of sweep "
                        f"recipes; this one is kind {recipe['kind']!r}")
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(
            max_rounds, int) or max_rounds < 1):
        raise UserError(f"max_rounds must be a whole number >= 1, got {max_rounds!r}")
    arms = _teams(name, recipe, teams, backend)
    members = _members(name, recipe, backend)
    if arms is not None and recipe["kind"] != "sweep":
        if len(arms) != 1:
            raise UserError(f"experiment {name!r}: a {recipe['kind']} recipe plays one team; "
                            f"got {len(arms)} ({', '.join(arms)})")
        (arm, composition), = arms.items()
        size = int(recipe.get("agents", 3))
        backend = team_specs(composition, size, f"experiment {name!r} team {arm!r}", members)
    out_dir = Path(out or f"runs/experiments/{name}")
    out_dir.mkdir(parents=True, exist_ok=True)
    if recipe["kind"] == "sweep":
        if agents is not None:
            recipe["sweep"] = {**(recipe.get("sweep") or {}), "agents": list(agents)}
        if max_rounds is not None:
            recipe["sweep"] = {**(recipe.get("sweep") or {}), "max_rounds": max_rounds}
        if arms is not None:
            size = (recipe.get("sweep") or {}).get("agents") or [3]
            arms = {arm: {n: team_specs(c, int(n), f"experiment {name!r} team {arm!r}",
                                        members) for n in size} for arm, c in arms.items()}
        table = _run_sweep(name, recipe, backend, seeds, out_dir, progress, budget, arms)
    elif recipe["kind"] == "generalize":
        table = _run_generalize(name, recipe, backend, seeds, out_dir, progress, budget)
    elif recipe["kind"] == "shocks":
        table = _run_shocks(name, recipe, backend, seeds, out_dir, progress, budget)
    else:
        table = _run_reflect(name, recipe, backend, seeds, out_dir, progress, budget)
    table.setdefault("caption", recipe.get("caption"))  # what its planner version shows
    if table.get("caption"):  # ... which these rows are not when other members played
        note = _caption_note(recipe, table, backend)
        if note is not None:
            table["caption_note"] = note
    table.setdefault("tokenizer", _tokenizers(table))  # which counter made its token columns
    (out_dir / "table.json").write_text(json.dumps(table, indent=2, default=str) + "\n",
                                        encoding="utf-8")
    (out_dir / "table.md").write_text(_markdown(table) + "\n", encoding="utf-8")
    return table


def _run_sweep(name: str, recipe: dict[str, Any], backend: str | None, seeds: int | None,
               out: Path, progress: bool, budget: dict[str, Any] | None = None,
               arms: dict[str, dict[int, str]] | None = None) -> dict[str, Any]:
    """A sweep recipe's table. ``arms``: each arm's member specs per team size."""
    from orgteams.agents.backends.spend import BudgetReached
    from orgteams.experiments.estimate import estimate_sweep
    from orgteams.experiments.report import load_rows, report
    from orgteams.experiments.sweep import (
        cell_key,
        check_limits,
        played,
        run_sweep,
        sweep_spend,
    )
    from orgteams.experiments.sweep_spec import BUDGET_FIELDS, SweepSpec

    budget = budget or NO_BUDGET
    data = dict(recipe.get("sweep") or {})
    if backend is not None:
        data["backends"] = ([b.strip() for b in backend.split(",") if b.strip()]
                            if recipe.get("backend_list") else [backend])
    arm_of: dict[str, str] = {}
    if arms is not None:
        for arm, by_size in arms.items():  # counts fit one size only (team_specs checked)
            spec = next(iter(by_size.values()))
            if spec in arm_of:
                raise UserError(f"experiment {name!r}: teams {arm_of[spec]!r} and {arm!r} "
                                f"are the same team ({spec})")
            arm_of[spec] = arm
        data["backends"] = list(arm_of)
    if seeds is not None:
        data["seeds"] = seeds
    data.update({k: budget[k] for k in BUDGET_FIELDS if budget[k] is not None})
    spec = SweepSpec.from_dict(data, source=f"experiment {name}")
    spec.validate(source=f"experiment {name}", flags={
        **({"backends": "--backend"} if backend is not None else {}),
        **({"seeds": "--seeds"} if seeds is not None else {})})
    check_limits(spec, out)  # before spec.yaml says what ran
    spend = sweep_spend(spec, out)
    if spend is not None and budget["on_estimate"] is not None:
        budget["on_estimate"](estimate_sweep(spec, out), spend)
    (out / "spec.yaml").write_text(yaml.safe_dump(spec.to_dict(), sort_keys=False),
                                   encoding="utf-8")
    ran = run_sweep(spec, out, workers=1, progress=progress)
    if ran["budget_reached"]:
        raise BudgetReached(ran["spend"]["spent_usd"], ran["spend"]["max_cost"],
                            Path(ran["spend"]["ledger"]),
                            f"{ran['skipped'] + ran['ok']} of {ran['cells']} episodes")
    # this spec's cells only, the latest row of each (a retried error is no error now;
    # rows of other seeds or teams played into the same folder are not this table's)
    keys = {cell_key(c) for c in spec.cells()}
    report(out / "results.jsonl", out, baseline=recipe.get("baseline"), progress=progress,
           keys=keys)
    rows, _ = load_rows(out / "results.jsonl")
    rows = [r for r in rows if (r.get("key") or cell_key(r["cell"])) in keys]
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
    if arm_of:
        columns.insert(0, "team")
    out_rows, role_rows = [], []
    kept: dict[tuple, list[EpisodeSummary]] = {}
    for key, group in groups.items():
        ok = [EpisodeSummary.from_dict(r["summary"]) for r in group if played(r)]
        kept[key] = ok
        entry: dict[str, Any] = {"team": arm_of[key[3]]} if arm_of else {}
        entry.update(zip(["task", "layout", "agents", "backend", "organization"], key,
                         strict=True))
        entry.update(n=len(ok), errors=len(group) - len(ok),
                     success_rate=fmean(bool(s.success) for s in ok) if ok else None)
        for m in metrics:
            values = [float(s.value(m)) for s in ok if isinstance(s.value(m), int | float)]
            entry[m] = fmean(values) if values else None
        if behaviours:  # rule-based labels of every message the group's episodes sent
            found = episodes_label_shares(ok, log_dir=out / "logs")
            entry["messages"] = found["n"]
            entry.update({f"share_{k}": v for k, v in found["shares"].items()})
            # paper 1 reports shares per role: leaders' orders vs followers' reports
            role_rows += [{**dict(zip(CELL, key, strict=True)), "role": role,
                           "messages": part["n"],
                           **{f"share_{k}": v for k, v in part["shares"].items()}}
                          for role, part in found["by_role"].items()]
        out_rows.append(entry)
    table = {"experiment": name, "kind": "sweep", "description": recipe.get("description"),
             "caption": recipe.get("caption"), "columns": columns, "rows": out_rows,
             "report": str(out / "report.md")}
    played_all = [s for ok in kept.values() for s in ok]
    cut = sum(s.stop_reason == "max rounds" for s in played_all)
    if cut:  # a cut episode is no failure of the team: the columns must say what they compare
        table["notes"] = [f"{cut} of {len(played_all)} episodes stopped at the round cap "
                          f"(max_rounds {spec.max_rounds}) before the goal: they count as "
                          "failed and their ticks are those played by then, so success_rate "
                          f"and ticks compare the first {spec.max_rounds} rounds where they "
                          "were cut, not who finishes."]
    if behaviours:
        table.update(role_columns=[*CELL, "role", "messages", *shares], role_rows=role_rows)
    if recipe.get("contrast"):
        table["contrasts"] = _contrasts(name, recipe["contrast"], kept, arm_of)
    if recipe.get("across_sizes"):
        table["across_sizes"] = _across_sizes(name, recipe["across_sizes"], kept, arm_of)
    return table


def _across_sizes(name: str, spec: Any, kept: dict[tuple, list[EpisodeSummary]],
                  arm_of: dict[str, str]) -> list[dict[str, Any]]:
    """Kruskal-Wallis across team sizes per organization (``across_sizes: {metrics: [..],
    pair: [64, 256]}``): over every size, and over the two sizes of ``pair`` alone (the
    paper's 64 vs 256), with each size's mean."""
    from orgteams.experiments.stats import kruskal

    metrics = spec.get("metrics") if isinstance(spec, dict) else None
    pair = spec.get("pair") if isinstance(spec, dict) else None
    if not (isinstance(metrics, list) and metrics and all(isinstance(m, str) for m in metrics)
            and (pair is None or (isinstance(pair, list) and len(pair) == 2))):
        raise UserError(f"experiment {name!r}: field 'across_sizes' must be {{metrics: "
                        "[names], pair: [size, size]}")
    out = []
    for key in dict.fromkeys((k[0], k[1], k[3], k[4]) for k in kept):
        sizes = sorted(k[2] for k in kept if (k[0], k[1], k[3], k[4]) == key)
        for metric in metrics:
            values = {n: [float(v) for s in kept[(key[0], key[1], n, key[2], key[3])]
                          if isinstance(v := s.value(metric), int | float)] for n in sizes}
            every = kruskal([values[n] for n in sizes])
            row = {"task": key[0], "layout": key[1], "backend": arm_of.get(key[2], key[2]),
                   "organization": key[3], "metric": metric,
                   "means": ", ".join(f"{n}: {_cell(fmean(v)) if v else '-'}"
                                      for n, v in values.items()),
                   "H": every["H"], "p": every["p"], "pair": None, "pair_H": None,
                   "pair_p": None}
            if pair is not None and all(n in values for n in pair):
                two = kruskal([values[n] for n in pair])
                row.update(pair=f"{pair[0]} vs {pair[1]}", pair_H=two["H"], pair_p=two["p"])
            out.append(row)
    return out


def _contrasts(name: str, pair: Any, kept: dict[tuple, list[EpisodeSummary]],
               arm_of: dict[str, str]) -> list[dict[str, Any]]:
    """Organization A against B (``contrast: [A, B]``) in every task, layout, size and
    backend: success rates, mean ticks with Welch's test, and A's abstention rate."""
    from orgteams.experiments.stats import welch

    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
        raise UserError(f"experiment {name!r}: field 'contrast' must be two organization "
                        "names [A, B]")
    a, b = pair
    out = []
    for key in dict.fromkeys(k[:4] for k in kept):
        left, right = kept.get((*key, a)), kept.get((*key, b))
        if not left or not right:
            continue
        ticks = [[float(s.ticks) for s in side] for side in (left, right)]
        test = welch(*ticks)
        abstain = [float(s.value("abstention_rate")) for s in left
                   if isinstance(s.value("abstention_rate"), int | float)]
        out.append({"task": key[0], "layout": key[1], "agents": key[2],
                    "backend": arm_of.get(key[3], key[3]), "a": a, "b": b,
                    "n": f"{len(left)}/{len(right)}",
                    "success_a": fmean(bool(s.success) for s in left),
                    "success_b": fmean(bool(s.success) for s in right),
                    "ticks_a": fmean(ticks[0]), "ticks_b": fmean(ticks[1]),
                    "ticks_welch_p": test["p"],
                    "abstention_rate_a": fmean(abstain) if abstain else None})
    return out


def _run_reflect(name: str, recipe: dict[str, Any], backend: str | None, seeds: int | None,
                 out: Path, progress: bool, budget: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.cli.progress import Progress
    from orgteams.experiments.reflect import run_reflect
    from orgteams.experiments.reflect_eval import evaluate_reflect
    from orgteams.experiments.stats import describe, paired_mde

    budget = budget or NO_BUDGET
    common = {k: recipe[k] for k in ("task", "layout", "agents", "critic", "coordinator",
                                     "iterations", "episodes_per_iteration", "max_rounds",
                                     "max_ticks") if k in recipe}
    common["backend"] = backend or recipe.get("backend", "planner")
    n = seeds or int(recipe.get("heldout_seeds", 40))
    ran = {"organization": recipe.get("organization", "leader"), **common, "heldout_seeds": n,
           "variants": recipe.get("variants") or {"default": {}}}
    configs = _reflect_configs(name, ran, common, out)  # every variant, before any plays
    spend = _reflect_spend(configs, n, out, budget)
    (out / "spec.yaml").write_text(yaml.safe_dump(ran, sort_keys=False), encoding="utf-8")
    columns = ["variant", "coordinator_input", "start", "best", "best_iteration", "path",
               "loop_costs", "loop_cost_start", "loop_cost_best", "iterations_played",
               "skipped_same_behaviour",
               "n", "heldout_start", "heldout_start_ci95", "heldout_best",
               "heldout_best_ci95", "difference", "difference_ci95", "cohens_dz",
               "mde_dz_80", "t_test_p", "wilcoxon_p"]
    best_costs: dict[str, list[float]] = {}
    rows = []
    for variant, config in configs.items():
        bar = Progress(config.iterations, f"{name} {variant}", enabled=progress)

        def on_progress(iteration: int, tick: int, limit: int, bar: Progress = bar,
                        total: int = config.iterations) -> None:
            bar.update(iteration, f"iteration {iteration + 1}/{total}: tick {tick}/{limit}")

        try:
            result = run_reflect(config, on_progress=on_progress, spend=spend)
            bar.update(config.iterations, "done")
        finally:
            bar.close()
        ev = _evaluated(out / variant, result, n)
        if ev is None:
            with BackendPool(spend=spend) as pool:
                ev = evaluate_reflect(out / variant, seeds=n, progress=progress,
                                      pool=pool)["rows"][0]
        start_ci, best_ci, diff_ci = (describe(c)["ci95"] for c in (
            ev["start_costs"], ev["best_costs"],
            [b - a for a, b in zip(ev["start_costs"], ev["best_costs"], strict=True)]))
        best_costs[variant] = list(ev["best_costs"])
        rows.append({"variant": variant, "coordinator_input": coordinator_input(result.history),
                     "start": ran["organization"], "best": result.best.name,
                     "best_iteration": result.best_iteration,
                     "path": " > ".join(_edit_of(r["organization_name"])
                                        for r in result.history),
                     "loop_costs": ", ".join(f"{r['cost']:.2f}" for r in result.history),
                     "loop_cost_start": result.history[0]["cost"],
                     "loop_cost_best": result.best_cost,
                     "iterations_played": f"{len(result.history)} of {config.iterations}"
                     + (" (nothing untried left)" if result.stopped else ""),
                     "skipped_same_behaviour": skipped_same_behaviour(result.history),
                     "n": ev["n"], "heldout_start": ev["mean_start"],
                     "heldout_start_ci95": start_ci, "heldout_best": ev["mean_best"],
                     "heldout_best_ci95": best_ci, "difference": ev["mean_difference"],
                     "difference_ci95": diff_ci, "cohens_dz": ev["cohens_dz"],
                     "mde_dz_80": paired_mde(ev["n"]),
                     "t_test_p": ev["t_test_p"], "wilcoxon_p": ev["wilcoxon_p"]})
    return {"experiment": name, "kind": "reflect", "description": recipe.get("description"),
            "columns": columns, "rows": rows, "between_variants": _between(best_costs)}


def skipped_same_behaviour(history: list[dict[str, Any]]) -> int:
    """Candidates of a run's decisions skipped, before any episode, because they resolve to
    the same behaviour as an organization already played or screened."""
    return sum(str(c.get("reason") or "").startswith("skipped: resolves to the same behaviour")
               for row in history for c in (row.get("decision") or {}).get("candidates", []))


def _between(best_costs: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Each later variant's best against the first's on the same held-out seeds (paired:
    the variants share their training seeds, hence their held-out ones)."""
    from orgteams.experiments.reflect_eval import paired_comparison
    from orgteams.experiments.stats import describe

    names = list(best_costs)
    out = []
    for other in names[1:]:
        a, b = best_costs[names[0]], best_costs[other]
        if len(a) != len(b) or len(a) < 2:
            continue
        found = paired_comparison(a, b)
        out.append({"a": names[0], "b": other, "n": found["n"],
                    "difference": found["mean_difference"],
                    "difference_ci95": describe([y - x for x, y in zip(a, b, strict=True)])[
                        "ci95"], "cohens_dz": found["cohens_dz"],
                    "t_test_p": found["t_test_p"], "wilcoxon_p": found["wilcoxon_p"]})
    return out


def _reflect_spend(configs: dict[str, Any], heldout: int, out: Path, budget: dict[str, Any],
                   extra: Callable[[], list[Any]] | None = None) -> Any:
    """The recipe's :class:`~orgteams.agents.backends.spend.Spend` (every variant and the
    evaluation: ``out/spend.json``), its estimate given to ``on_estimate``; None when no
    model of it has a price and it has no budget. ``extra()``: further episodes (their
    :class:`~orgteams.config.EpisodeConfig`) the recipe will play, estimated too."""
    from orgteams.agents.backends.spend import LEDGER, Spend
    from orgteams.criticize_reflect.loop import finished_iterations
    from orgteams.experiments.estimate import Cells, Estimate, estimate_reflect
    from orgteams.experiments.reflect import reflect_spend

    priced = [reflect_spend(c.replace(max_cost=budget["max_cost"],
                                      price_per_mtok=budget["price_per_mtok"]))
              for c in configs.values()]
    if not any(s is not None for s in priced):
        return None
    spend = Spend(budget["max_cost"], out / LEDGER, budget["price_per_mtok"])
    if budget["on_estimate"] is not None:
        estimate, cells = Estimate(), Cells()
        for variant, config in configs.items():
            folder = out / variant
            done = _evaluated(folder, None, heldout) is not None
            estimate.merge(estimate_reflect(
                config.replace(price_per_mtok=budget["price_per_mtok"]),
                0 if done else heldout, cells, finished_iterations(folder)))
        if extra is not None:
            from orgteams.experiments.estimate import estimate_episodes

            estimate.merge(estimate_episodes(extra(), budget["price_per_mtok"], cells))
        budget["on_estimate"](estimate, spend)
    return spend


def _evaluated(folder: Path, result: Any, heldout: int) -> dict[str, Any] | None:
    """The evaluation row of a variant evaluated before on ``heldout`` seeds (of this
    best organization, when ``result`` is given), else None: it is played (again)."""
    path = folder / "evaluation.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        row = report["rows"][0]
        same = len(report["heldout_seeds"]) == heldout and row.get("n") == heldout and (
            result is None or report["best"] == result.best.name)
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return row if same else None


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


def _run_generalize(name: str, recipe: dict[str, Any], backend: str | None,
                    seeds: int | None, out: Path, progress: bool,
                    budget: dict[str, Any] | None = None) -> dict[str, Any]:
    """Paper 1 C.3: a Criticize-Reflect run on the recipe's task (``out/reflect``, resumed
    when it is there), then its best organization against the fixed starting one (a
    leader) on held-out seeds of every task of ``groups``, per task and per group (a
    group's tasks' seeds pooled as pairs)."""
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.cli.progress import Progress
    from orgteams.config import EpisodeConfig
    from orgteams.experiments.reflect import run_reflect
    from orgteams.experiments.reflect_eval import evaluate_reflect, heldout_seeds
    from orgteams.organizations.spec.library import load_organization

    budget = budget or NO_BUDGET
    groups = recipe.get("groups")
    if not (isinstance(groups, dict) and groups and all(
            isinstance(v, list) and v and all(isinstance(t, str) for t in v)
            for v in groups.values())):
        raise UserError(f"experiment {name!r}: recipe field 'groups' must map each group "
                        "to a non-empty list of task names")
    tasks = [t for ts in groups.values() for t in ts]
    common = {k: recipe[k] for k in ("task", "layout", "agents", "critic", "coordinator",
                                     "iterations", "episodes_per_iteration", "max_rounds",
                                     "max_ticks") if k in recipe}
    common["backend"] = backend or recipe.get("backend", "planner")
    n = seeds or int(recipe.get("heldout_seeds", 40))
    start = recipe.get("organization", "leader")
    ran = {"organization": start, **common, "heldout_seeds": n, "groups": groups,
           "variants": {"reflect": {"use_critic": bool(recipe.get("use_critic", True))}}}
    config = _reflect_configs(name, ran, common, out)["reflect"]
    from orgteams.envs.core.tasks import load_task

    for task in tasks:  # a bad task name fails now, before anything plays
        load_task(task)
    folder = out / "reflect"

    def evaluation() -> list[Any]:
        if _evaluated_on(folder, None, n, tasks) is not None:
            return []
        held = heldout_seeds(list(config.seeds), n)
        org = load_organization(start) if isinstance(start, str) else start
        base = EpisodeConfig(layout=config.layout, agents=config.agents,
                             backend=config.backend, organization=org)
        return [base.replace(task=t, seed=s) for t in tasks for s in held] * 2

    spend = _reflect_spend({"reflect": config}, 0, out, budget, extra=evaluation)
    (out / "spec.yaml").write_text(yaml.safe_dump(ran, sort_keys=False), encoding="utf-8")
    bar = Progress(config.iterations, f"{name} reflect", enabled=progress)

    def on_progress(iteration: int, tick: int, limit: int) -> None:
        bar.update(iteration, f"iteration {iteration + 1}/{config.iterations}: "
                              f"tick {tick}/{limit}")

    try:
        result = run_reflect(config, on_progress=on_progress, spend=spend)
        bar.update(config.iterations, "done")
    finally:
        bar.close()
    report = _evaluated_on(folder, result, n, tasks)
    if report is None:
        with BackendPool(spend=spend) as pool:
            report = evaluate_reflect(folder, seeds=n, tasks=tasks, layouts=[config.layout],
                                      progress=progress, pool=pool)
    by_task = {r["task"]: r for r in report["rows"]}
    columns = ["group", "task", "n", "leader", "leader_ci95", "best", "best_ci95",
               "difference", "difference_ci95", "cohens_dz", "t_test_p", "wilcoxon_p",
               "lower_cost_seeds"]
    rows = []
    for group, names in groups.items():
        for task in names:
            rows.append({"group": group, "task": task, **_arm_row(by_task[task])})
        pooled = [by_task[t] for t in names if by_task[t].get("n")]
        rows.append({"group": group, "task": f"all {len(pooled)} {group} tasks", **_arm_row({
            "start_costs": [c for r in pooled for c in r["start_costs"]],
            "best_costs": [c for r in pooled for c in r["best_costs"]]})})
    return {"experiment": name, "kind": "generalize", "description": recipe.get("description"),
            "columns": columns, "rows": rows, "start": report["start"],
            "best": report["best"], "best_iteration": result.best_iteration,
            "trained_on": f"{config.task} / {config.layout}",
            "layout": config.layout, "heldout_seeds": report["heldout_seeds"],
            "notes": [f"best: {report['best']} (iteration {result.best_iteration} of the "
                      f"loop on {config.task} / {config.layout}) against the fixed "
                      f"{report['start']} on {config.layout}, {n} held-out seeds "
                      f"{report['heldout_seeds'][0]}..{report['heldout_seeds'][-1]} per "
                      "task; cost = ticks + message tokens sent per tick (lower is better)"]}


def _arm_row(row: dict[str, Any]) -> dict[str, Any]:
    """One task's (or a group's pooled) fixed leader vs best: means with 95% CIs, the
    paired difference, its tests, and on how many seeds the best cost less."""
    from orgteams.experiments.reflect_eval import paired_comparison
    from orgteams.experiments.stats import describe

    a, b = row.get("start_costs") or [], row.get("best_costs") or []
    if not a:
        return {"n": 0, "lower_cost_seeds": f"skipped: {row.get('skipped')}"}
    found = paired_comparison(a, b)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    return {"n": len(a), "leader": found["mean_start"], "leader_ci95": describe(a)["ci95"],
            "best": found["mean_best"], "best_ci95": describe(b)["ci95"],
            "difference": found["mean_difference"], "difference_ci95": describe(diffs)["ci95"],
            "cohens_dz": found["cohens_dz"], "t_test_p": found["t_test_p"],
            "wilcoxon_p": found["wilcoxon_p"],
            "lower_cost_seeds": f"{sum(d < 0 for d in diffs)}/{len(diffs)}"}


def _evaluated_on(folder: Path, result: Any, heldout: int, tasks: list[str]
                  ) -> dict[str, Any] | None:
    """The evaluation report of ``folder`` when it covers ``tasks`` on ``heldout`` seeds
    (of this best organization, when ``result`` is given), else None."""
    path = folder / "evaluation.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        same = (len(report["heldout_seeds"]) == heldout
                and [r["task"] for r in report["rows"]] == tasks
                and (result is None or report["best"] == result.best.name))
    except (ValueError, KeyError, TypeError):
        return None
    return report if same else None


def _run_shocks(name: str, recipe: dict[str, Any], backend: str | None, seeds: int | None,
                out: Path, progress: bool, budget: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """Every organization under every shock condition (``orgteams run --shock`` strings or
    mappings, as in a sweep spec's ``shocks``), once per seed: success, ticks and recovery
    in rounds and ticks (docs/shocks.md; a shock that did not recover, or hit before any
    progress (no baseline), is counted, never averaged)."""
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.agents.backends.spend import MAX_COST
    from orgteams.experiments.sweep import _Progress
    from orgteams.experiments.sweep_spec import SweepSpec, cell_config
    from orgteams.organizations.rounds.shocks import recovery_summary
    from orgteams.run import run_episode

    budget = budget or NO_BUDGET
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
    columns = ["organization", "condition", "n", "errors", "success_rate", "ticks",
               "shocks_applied", "recovered", "not_recovered", "no_baseline",
               "recovery_rounds", "recovery_ticks"]
    cells = list(spec.cells())
    options = spec.episode_options()
    spend = _shocks_spend(spec, cells, options, out, budget)
    bar = _Progress(len(cells), progress)
    found: dict[tuple[str, str], list[EpisodeSummary]] = {}
    errors: dict[tuple[str, str], int] = {}
    with BackendPool(spend=spend) as pool:
        for i, cell in enumerate(cells):
            if spend is not None:  # a shocks recipe keeps no rows: a rerun plays them all
                spend.check(f"{i} of {len(cells)} episodes (not kept)")
            result = run_episode(config=cell_config(cell, None, options), pool=pool)
            if spend is not None and result.summary.stop_reason == MAX_COST:
                spend.check(f"{i} of {len(cells)} episodes (not kept)")
            group = (cell["organization"], cell["shocks"])
            kept = found.setdefault(group, [])
            if result.summary.complete:
                kept.append(result.summary)
                status = "ok"
            else:  # stopped early (its model failed): it did not play, so it is no data
                from orgteams.organizations.rounds.status import why_stopped

                errors[group] = errors.get(group, 0) + 1
                status = f"error ({why_stopped(result.summary)})"
            bar.update({"key": f"{cell['organization']}|{cell['shocks']}|{cell['seed']}",
                        "status": status})
    bar.close()
    rows = []
    for (org, condition), summaries in found.items():
        rec = recovery_summary(summaries) or {}
        rows.append({"organization": org, "condition": condition, "n": len(summaries),
                     "errors": errors.get((org, condition), 0),
                     "success_rate": (fmean(bool(s.success) for s in summaries)
                                      if summaries else None),
                     "ticks": fmean(float(s.ticks) for s in summaries) if summaries else None,
                     "shocks_applied": rec.get("applied", 0),
                     "recovered": rec.get("recovered", 0),
                     "not_recovered": rec.get("not_recovered", 0),
                     "no_baseline": rec.get("no_baseline", 0),
                     "recovery_rounds": rec.get("mean_rounds"),
                     "recovery_ticks": rec.get("mean_ticks")})
    return {"experiment": name, "kind": "shocks", "description": recipe.get("description"),
            "columns": columns, "rows": rows}


def _shocks_spend(spec: Any, cells: list[dict], options: dict[str, Any], out: Path,
                  budget: dict[str, Any]) -> Any:
    """A shocks recipe's :class:`~orgteams.agents.backends.spend.Spend`
    (``out/spend.json``), its estimate given to ``on_estimate``; None when no model of it
    has a price and it has no budget."""
    from orgteams.agents.backends.spend import LEDGER, Spend, check_priced
    from orgteams.experiments.estimate import estimate_episodes, spec_models
    from orgteams.experiments.sweep_spec import cell_config

    max_cost, price = budget["max_cost"], budget["price_per_mtok"]
    if not (check_priced(spec_models(spec), price, max_cost) or max_cost is not None):
        return None
    spend = Spend(max_cost, out / LEDGER, price)
    if budget["on_estimate"] is not None:
        configs = [cell_config(c, None, options) for c in cells]
        budget["on_estimate"](estimate_episodes(configs, price), spend)
    return spend


def _cell(value: Any) -> str:
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int | float) for v in value):  # a confidence interval
        return f"[{_cell(float(value[0]))}, {_cell(float(value[1]))}]"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 0.01 else f"{value:.2f}"
    return "-" if value is None else str(value)


def _specs(backends: Any) -> set[str]:
    """Member specs of backend strings (one spec, or a comma list with one per agent)."""
    return {p.strip() for b in backends or [] for p in str(b).split(",") if p.strip()}


def _caption_note(recipe: dict[str, Any], table: dict[str, Any],
                  backend: str | None) -> str | None:
    """A line saying the caption is about the recipe's own members when this run played
    others (``--backend``/``--team``), else None: a caption such as "Planner teams ...:
    they cannot show how LLM members reason" must not head rows a model played."""
    if recipe["kind"] == "sweep":
        own = _specs((recipe.get("sweep") or {}).get("backends") or ["planner"])
        own |= _specs((recipe.get("members") or {}).values())
        ran = _specs(r.get("backend") for r in table.get("rows") or [])
    else:
        own = _specs([recipe.get("backend") or "planner"])
        ran = _specs([backend or recipe.get("backend") or "planner"])
    other = ran - own
    if not other:
        return None
    return (f"This run's members ({', '.join(sorted(other))}) are not the recipe's own "
            f"({', '.join(sorted(own))}): the caption below describes the recipe's own "
            "version, not what these rows show.")


def _tokenizers(table: dict[str, Any]) -> str:
    """The method(s) that counted the table's message tokens: what its rows recorded,
    else this process's counter (the recipes run their episodes in this process)."""
    from orgteams.agents.llm.tokens import tokenizer_name

    names = {str(t) for r in table.get("rows") or [] for t in
             (r.get("tokenizers") or ([r["tokenizer"]] if r.get("tokenizer") else []))}
    return ", ".join(sorted(names)) if names else tokenizer_name()


def _token_line(table: dict[str, Any]) -> str | None:
    """One line saying how the token columns were counted (None without such columns)."""
    from orgteams.agents.llm.tokens import REGEX_NAME, approximate_note

    if not any("token" in str(c) for c in table["columns"]) or not table.get("tokenizer"):
        return None
    name = str(table["tokenizer"])
    if name == REGEX_NAME:
        return f"Message tokens: {approximate_note(REGEX_NAME)}."
    if "," in name:
        return (f"Message tokens: counted by different methods ({name}): the token "
                "columns mix counts that are not comparable.")
    return f"Message tokens: counted with {name}."


def _markdown(table: dict[str, Any]) -> str:
    cols = table["columns"]
    lines = [f"# {table['experiment']}", "", str(table.get("description") or ""), ""]
    if table.get("caption_note"):
        lines += [str(table["caption_note"]), ""]
    if table.get("caption"):
        lines += [" ".join(str(table["caption"]).split()), ""]
    if (tokens := _token_line(table)) is not None:
        lines += [tokens, ""]
    lines += [*[line for note in table.get("notes") or [] for line in (note, "")],
              "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in cols) + " |" for r in table["rows"]]
    if table.get("role_rows"):  # behaviours: the shares per role within each organization
        cols = table["role_columns"]
        lines += ["", "Per role (leaders vs followers, as paper 1 section 4.3 reports them):",
                  "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_cell(r.get(c)) for c in cols) + " |"
                  for r in table["role_rows"]]
    contrasts = table.get("contrasts") or []
    if contrasts:
        keys = ["task", "layout", "agents", "backend", "a", "b", "n", "success_a",
                "success_b", "ticks_a", "ticks_b", "ticks_welch_p", "abstention_rate_a"]
        lines += ["", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(_cell(c.get(k)) for k in keys) + " |" for c in contrasts]
    across = table.get("across_sizes") or []
    if across:
        keys = ["task", "layout", "backend", "organization", "metric", "means", "H", "p",
                "pair", "pair_H", "pair_p"]
        lines += ["", "Kruskal-Wallis across team sizes (mean per size):", "",
                  "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(_cell(c.get(k)) for k in keys) + " |" for c in across]
    for b in table.get("between_variants") or []:
        lines += ["", f"{b['b']} best - {b['a']} best on the same {b['n']} held-out seeds: "
                      f"{_cell(b['difference'])} {_cell(b['difference_ci95'])}, d_z "
                      f"{_cell(b['cohens_dz'])}, paired t p {_cell(b['t_test_p'])}, "
                      f"Wilcoxon p {_cell(b['wilcoxon_p'])}"]
    return "\n".join(lines)
