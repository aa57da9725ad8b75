"""Reports on sweep results: mean, sd, 95% CI, success rate, Welch's t-test, PNG plots.

:func:`report` reads a sweep's ``results.jsonl`` (see :mod:`orgteams.experiments.sweep`) and
groups the ``ok`` rows by (task, layout, agents, backend, organization). For
``ticks``, ``rounds``, ``comm_tokens_per_step`` and ``fallback_rate`` (the share of
decisions that fell back to the safe action) it gives n, mean, sample sd
(ddof=1) and a 95% confidence interval from the t-distribution
(``mean +- t(0.975, n-1) * sd / sqrt(n)``), over all episodes and over successful
ones (labelled ``all_episodes`` / ``successful_episodes``). Each organization is
compared to a baseline of the same (task, layout, agents, backend) with Welch's
t-test (unequal variances, all episodes) on ticks and comm tokens per step (tokens
*sent* per tick), with Cohen's d beside it (pooled sd), and all organizations of a
context are compared at once with the Kruskal-Wallis H test. Each group also gets the
role stability index (RSI: how often an agent keeps its role from one episode to the
next, episodes in seed order, each episode's role being the one held most rounds;
from the summaries' ``roles_by_round``), the mean leader tenure (rounds per leadership
term) and self-vote rate (share of ballots cast for oneself) over the episodes that
have them (:data:`LEADERSHIP`), the tokenizer its token counts came from, and the
shares of the cooperative-behaviour labels (organized-teams paper §4.3) of every
message its episodes sent, overall and per role (rule-based,
:mod:`orgteams.experiments.behaviours`; read from the episode logs, episodes without a
log counted as ``missing_logs``) and how its
episodes ended (``stop_reasons``: ``goal met``, ``max ticks``, ``max rounds``).

Only episodes that really played count: a row is used when its ``status`` is ``ok``
and its summary's ``episode_status`` (when present) is ``complete``. Every other cell
(a crash, or an episode stopped early as ``error`` or ``interrupted``: a dead server,
a model that never replied validly) is counted in its group's ``errors`` and listed
under ``failed`` with its ``stop_reason`` and reason, never averaged.

Needs the ``report`` extra (``pip install "orgteams[report]"``: scipy, matplotlib).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from orgteams.errors import MissingExtraError, UserError
from orgteams.experiments.stats import (
    REPORT_HINT,
    cohens_d,
    describe,
    finite_or_none,
    kruskal,
    scipy_stats,
    welch,
)
from orgteams.experiments.sweep import KEY_FIELDS, cell_key, played, read_results
from orgteams.organizations.rounds.episode_summary import EpisodeSummary

METRICS = ("ticks", "rounds", "comm_tokens_per_step", "fallback_rate")
MAX_METRIC = 1e12  # no episode counts more ticks or tokens per step; a larger value is an edit
TESTED = ("ticks", "comm_tokens_per_step")
CONTEXT = ("task", "layout", "agents", "backend", "shocks")  # shocks: a sweep's condition
LEADERSHIP = ("leader_tenure", "self_vote_rate")
"""Leadership outcomes reported per group: means over episodes that have them."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtraError(REPORT_HINT) from None
    return plt


def group_rsi(episodes: list[EpisodeSummary]) -> float | None:
    """Role stability index of a group's episodes (seed order); None when fewer than 2
    episodes recorded roles (``roles_by_round``)."""
    from orgteams.organizations.metrics.episode_metrics import episode_roles, role_stability_index

    with_roles = sorted((e for e in episodes if e.roles_by_round),
                        key=lambda e: (e.seed is None, e.seed or 0))
    if len(with_roles) < 2:
        return None
    roles = [episode_roles(e.roles_by_round) for e in with_roles]
    return finite_or_none(role_stability_index(roles))


def _check_row(row: dict, where: str) -> None:
    """A result row must name its whole cell; else one line naming the row and field."""
    cell = row.get("cell")
    if not isinstance(cell, dict):
        raise UserError(f"{where}: field 'cell' must be a mapping of {', '.join(KEY_FIELDS)}")
    missing = [k for k in KEY_FIELDS if k not in cell]
    if missing:
        raise UserError(f"{where}: field 'cell.{missing[0]}' is missing (rows written by "
                        "orgteams sweep name task, layout, organization, agents, backend, seed)")
    summary = row.get("summary")
    if row.get("status") != "ok" or not isinstance(summary, dict):
        return
    # what the tables average: a text here was counted ('yes' a success) or dropped unsaid
    success = summary.get("success")
    if success is not None and success not in (True, False):
        raise UserError(f"{where}: field 'summary.success' must be true or false, "
                        f"got {success!r}")
    for k in METRICS:
        v = summary.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise UserError(f"{where}: field 'summary.{k}' must be a number, got {v!r}")
        if v is not None and not abs(v) <= MAX_METRIC:  # nan, inf, 1e308: a mean of
            # "nan ± nan" or an OverflowError traceback in the variance
            raise UserError(f"{where}: field 'summary.{k}' must be a finite number of at "
                            f"most {MAX_METRIC:g} in size, got {v!r}")


def load_rows(results_path: str | Path) -> tuple[list[dict], dict[str, int]]:
    """The last row per cell key (a retried error replaced by its success), and counts."""
    rows, bad = read_results(results_path)
    for i, r in enumerate(rows):
        _check_row(r, f"{results_path}: result row {i + 1}")
    latest: dict[str, dict] = {}
    for r in rows:
        key = r.get("key") or cell_key(r["cell"])
        if key in latest and played(latest[key]) and not played(r):
            continue  # never let a later error hide a finished episode
        latest[key] = r
    kept = list(latest.values())
    return kept, {"lines": len(rows), "unreadable_lines": bad, "cells": len(kept),
                  "error_cells": sum(not played(r) for r in kept)}


def report(results_path: str | Path, out_dir: str | Path, baseline: str | None = None,
           plots: bool = True, progress: bool = False,
           keys: Collection[str] | None = None) -> dict[str, Any]:
    """Write ``report.md``, ``report.json`` and PNG plots to ``out_dir``; return the JSON.

    Args:
        baseline: Organization every other is tested against; default ``none`` where
            present in a context, else the first organization seen there.
        progress: A bar on stderr over the groups (reading their episode logs is the
            long part of a report over many runs).
        keys: Only these cell keys (an experiment's spec); the file's rows of other
            cells, from earlier runs into the same folder, are counted as ``other_cells``
            and left out.
    """
    from orgteams.cli.progress import Progress
    from orgteams.experiments.behaviours import episodes_label_shares

    scipy_stats()
    results_path, out_dir = Path(results_path), Path(out_dir)
    if not results_path.exists():
        raise FileNotFoundError(f"results file not found: {results_path}")
    rows, counts = load_rows(results_path)
    if not rows:  # else an empty report.md, as if the sweep had measured nothing
        raise UserError(f"{results_path}: no result rows ({counts['unreadable_lines']} "
                        "unreadable line(s)); expected the results.jsonl orgteams sweep writes")
    if keys is not None:
        mine = [r for r in rows if (r.get("key") or cell_key(r["cell"])) in keys]
        counts.update(cells=len(mine), error_cells=sum(not played(r) for r in mine),
                      other_cells=len(rows) - len(mine))
        rows = mine
    groups: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        c = r["cell"]
        gkey = tuple(c.get(k) for k in CONTEXT) + (c.get("organization"),)
        g = groups.setdefault(gkey, {**{k: c.get(k) for k in CONTEXT},
                                     "organization": c.get("organization"),
                                     "episodes": [], "errors": 0})
        if played(r):
            g["episodes"].append(EpisodeSummary.from_dict(r["summary"]))
        else:
            g["errors"] += 1
    contexts: dict[tuple, list[dict]] = {}
    for gkey, g in groups.items():
        contexts.setdefault(gkey[:-1], []).append(g)
    if baseline is not None and not any(g["organization"] == baseline for g in groups.values()):
        known = sorted({str(g["organization"]) for g in groups.values()})
        raise UserError(f"baseline organization {baseline!r} is not in {results_path} "
                        f"(organizations: {', '.join(known)})")

    out_groups = []
    bar = Progress(len(groups), f"report {results_path}", enabled=progress)
    for ctx_groups in contexts.values():
        orgs = [g["organization"] for g in ctx_groups]
        base = baseline if baseline in orgs else ("none" if "none" in orgs else orgs[0])
        base_eps = next(g for g in ctx_groups if g["organization"] == base)["episodes"]
        for g in ctx_groups:
            eps = g["episodes"]
            wins = [e for e in eps if e.success]
            entry = {k: g[k] for k in (*CONTEXT, "organization")}
            entry.update({"n": len(eps), "errors": g["errors"], "successes": len(wins),
                          "success_rate": len(wins) / len(eps) if eps else None,
                          "baseline": base, "metrics": {}, "welch_vs_baseline": None,
                          "rsi": group_rsi(eps), "recovery": _recovery(eps),
                          "stop_reasons": dict(sorted(Counter(
                              str(e.stop_reason or "not recorded") for e in eps).items())),
                          **{m: describe(_values(eps, m))["mean"] for m in LEADERSHIP},
                          # the same columns over the successful episodes, for that table
                          "successful_episodes": {
                              "rsi": group_rsi(wins),
                              **{m: describe(_values(wins, m))["mean"] for m in LEADERSHIP}},
                          "tokenizers": sorted({str(e.tokenizer) for e in eps
                                                if e.tokenizer}),
                          # paper 1 section 4.3: rule-based labels of every message sent
                          "behaviours": episodes_label_shares(
                              eps, log_dir=results_path.parent / "logs")})
            bar.update(len(out_groups) + 1, str(g["organization"]))
            for m in METRICS:
                entry["metrics"][m] = {
                    "all_episodes": describe(_values(eps, m)),
                    "successful_episodes": describe(_values(wins, m)),
                }
            if g["organization"] != base:
                entry["welch_vs_baseline"] = {
                    "baseline": base, "over": "all_episodes",
                    **{m: {**welch(_values(eps, m), _values(base_eps, m)),
                           "d": cohens_d(_values(eps, m), _values(base_eps, m))}
                       for m in TESTED}}
            out_groups.append(entry)
        kw = {m: kruskal([_values(g["episodes"], m) for g in ctx_groups]) for m in TESTED}
        for entry in out_groups[-len(ctx_groups):]:
            entry["kruskal_across_organizations"] = kw

    bar.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = [{"key": r.get("key") or cell_key(r["cell"]), "status": r.get("status"),
               "episode_status": (s := _summary_of(r)) and s.episode_status,
               "stop_reason": s and s.stop_reason,
               "error": r.get("error")} for r in rows if not played(r)]
    result: dict[str, Any] = {"results": str(results_path), **counts,
                              "baseline": baseline, "confidence": 0.95,
                              "groups": out_groups, "failed": failed, "files": {}}
    if plots:
        result["files"]["plots"] = _plots(contexts, out_groups, out_dir)
    md = out_dir / "report.md"
    md.write_text(_markdown(result), encoding="utf-8")
    result["files"]["markdown"] = str(md)
    js = out_dir / "report.json"
    result["files"]["json"] = str(js)
    js.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return result


def _summary_of(row: dict) -> EpisodeSummary | None:
    """A result row's summary (an error row may have none)."""
    summary = row.get("summary")
    return EpisodeSummary.from_dict(summary) if isinstance(summary, dict) else None


def _recovery(episodes: list[EpisodeSummary]) -> dict[str, Any] | None:
    """Recovery of the group's shocks (docs/shocks.md): counts, and mean, sd and CI of
    rounds and ticks over the shocks that recovered only; None (not recovered, or no
    pre-shock rate: "no baseline") is counted, never averaged."""
    from orgteams.organizations.rounds.shocks import recovery_summary

    rec = recovery_summary(episodes)
    if rec is None:
        return None
    rounds, ticks = rec.pop("rounds"), rec.pop("ticks")
    rec.pop("mean_rounds")
    rec.pop("mean_ticks")
    return {**rec, "recovery_rounds": describe([float(r) for r in rounds]),
            "recovery_ticks": describe([float(t) for t in ticks])}


def _values(episodes: list[EpisodeSummary], metric: str) -> list[float]:
    return [float(e.value(metric)) for e in episodes
            if isinstance(e.value(metric), int | float) and not isinstance(e.value(metric), bool)]


def _ctx_title(g: dict) -> str:
    shocks = f", shocks {g['shocks']}" if g.get("shocks") is not None else ""
    return f"{g['task']} on {g['layout']}, {g['agents']} agents, backend {g['backend']}{shocks}"


def _slug(g: dict) -> str:
    raw = f"{g['task']}_{g['layout']}_a{g['agents']}_{g['backend']}"
    if g.get("shocks") is not None:
        raw += f"_shocks-{g['shocks']}"
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", raw)


def _fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _cell(d: dict) -> str:
    if not d["n"]:
        return "-"
    s = _fmt(d["mean"])
    if d["sd"] is not None:
        s += f" ± {_fmt(d['sd'])} [{_fmt(d['ci95'][0])}, {_fmt(d['ci95'][1])}]"
    return s


def _markdown(result: dict) -> str:
    from orgteams.experiments.behaviours import role_shares_markdown, shares_markdown

    lines = ["# Sweep report", "",
             f"Results: `{result['results']}` ({result['cells']} cells, "
             f"{result['error_cells']} failed, {result['unreadable_lines']} unreadable lines "
             "skipped" + (f"; {result['other_cells']} cells of other runs left out"
                          if result.get("other_cells") else "") + ").", "",
             "Cells: mean ± sd [95% CI, t-distribution] over the n episodes that finished. "
             "Welch's t-test (unequal variances) and Cohen's d (pooled sd) against the "
             "baseline organization, over all episodes; Kruskal-Wallis across all "
             "organizations. Comm tokens/step = message tokens sent per tick. RSI = role "
             "stability index across episodes. Tenure = mean rounds per leadership term; "
             "self-votes = share of ballots cast for oneself (means over the episodes that "
             "have them). Fallback rate = share of decisions that fell back to the safe "
             "action. Only complete episodes count; the others are listed at the end.", ""]
    by_ctx: dict[str, list[dict]] = {}
    for g in result["groups"]:
        by_ctx.setdefault(_ctx_title(g), []).append(g)
    for title, gs in by_ctx.items():
        toks = ", ".join(f"`{t}`" for t in sorted(
            {t for g in gs for t in g.get("tokenizers", [])})) or "not recorded"
        lines += [f"## {title}", "", f"Baseline: `{gs[0]['baseline']}`. Tokenizer: {toks}.", ""]
        for over, label in (("all_episodes", "All episodes"),
                            ("successful_episodes", "Successful episodes only")):
            lines += [f"### {label}", "",
                      "| organization | n | errors | success rate | ticks | rounds | "
                      "comm tokens/step | fallback rate | RSI | tenure | self-votes |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for g in gs:
                n = g["n"] if over == "all_episodes" else g["successes"]
                # RSI, tenure and self-votes of the episodes this table counts
                roles = g if over == "all_episodes" else g.get("successful_episodes", {})
                lines.append(
                    f"| {g['organization']} | {n} | {g['errors']} | "
                    f"{_fmt(g['success_rate'])} | "
                    + " | ".join(_cell(g["metrics"][m][over]) for m in METRICS)
                    + f" | {_fmt(roles.get('rsi'))} | {_fmt(roles.get('leader_tenure'))} | "
                    f"{_fmt(roles.get('self_vote_rate'))} |")
            lines.append("")
        lines += ["Ended by: " + "; ".join(
            f"{g['organization']} " + (", ".join(f"{k} {v}" for k, v in
                                                 g["stop_reasons"].items()) or "-")
            for g in gs) + ".", ""]
        lines += ["### Welch's t-test and Cohen's d against the baseline (all episodes)", "",
                  "| organization | ticks t | ticks p | ticks d | comm tokens/step t | "
                  "comm tokens/step p | comm tokens/step d |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for g in gs:
            w = g["welch_vs_baseline"]
            if w is None:
                lines.append(f"| {g['organization']} (baseline) | | | | | | |")
            else:
                lines.append(" | ".join(
                    [f"| {g['organization']}"]
                    + [f"{_fmt(w[m]['t'])} | {_fmt(w[m]['p'], 4)} | {_fmt(w[m]['d'])}"
                       for m in TESTED]) + " |")
        if any(g.get("recovery") for g in gs):
            lines += ["", "### Recovery from shocks (not recovered = failed episode, "
                      "shock never hit, or rate never back; no baseline = no progress "
                      "before the shock, recovery undefined: both counted, never averaged)",
                      "", "| organization | shocks applied | recovered | not recovered | "
                      "no baseline | successions | recovery rounds | recovery ticks |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for g in gs:
                rec = g.get("recovery")
                if rec:
                    lines.append(f"| {g['organization']} | {rec['applied']} | "
                                 f"{rec['recovered']} | {rec['not_recovered']} | "
                                 f"{rec.get('no_baseline', 0)} | "
                                 f"{rec.get('successions', 0)} | "
                                 f"{_cell(rec['recovery_rounds'])} | "
                                 f"{_cell(rec['recovery_ticks'])} |")
        kw = gs[0].get("kruskal_across_organizations") or {}
        lines += ["", "Kruskal-Wallis across organizations: " + "; ".join(
            f"{m} H {_fmt(kw[m]['H'])}, p {_fmt(kw[m]['p'], 4)} (k = {kw[m]['k']})"
            for m in TESTED if m in kw) + ".", ""]
        lines += ["### Cooperative behaviours (shares of rule-based message labels)", "",
                  *shares_markdown([(str(g["organization"]), g["behaviours"]) for g in gs]),
                  "", "Per role (the role each message's log line records: leaders vs "
                  "followers, as paper 1 section 4.3 reports them; labels as docs/"
                  "behaviours.md defines them):", "",
                  *role_shares_markdown([(str(g["organization"]), g["behaviours"])
                                         for g in gs]), ""]
        plots = [p for p in result["files"].get("plots", []) if Path(p).name.startswith(
            _slug(gs[0]) + "_")]
        lines += [f"![{Path(p).stem}]({Path(p).name})" for p in plots] + [""]
    if result["failed"]:
        lines += ["## Cells left out (did not play to the end)", "",
                  "| cell | status | episode status | stop reason | error |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{f['key']}` | {f['status']} | {f['episode_status'] or '-'} | "
                  f"{str(f.get('stop_reason') or '-').replace('|', '/')[:80]} | "
                  f"{str(f['error'] or '-').replace('|', '/')[:200]} |"
                  for f in result["failed"]]
        lines.append("")
    return "\n".join(lines)


def _plots(contexts: dict[tuple, list[dict]], out_groups: list[dict], out_dir: Path
           ) -> list[str]:
    plt = _pyplot()
    paths: list[str] = []
    for ctx_groups in contexts.values():
        entries = [e for e in out_groups
                   if all(e[k] == ctx_groups[0][k] for k in CONTEXT)]
        slug, title = _slug(entries[0]), _ctx_title(entries[0])
        orgs = [str(e["organization"]) for e in entries]
        for m, label in (("ticks", "ticks"), ("comm_tokens_per_step", "comm tokens / step")):
            stats = [e["metrics"][m]["all_episodes"] for e in entries]
            means = [s["mean"] if s["mean"] is not None else 0.0 for s in stats]
            err = [(s["mean"] - s["ci95"][0]) if s["ci95"] else 0.0 for s in stats]
            fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(orgs) + 2), 3.6))
            ax.bar(orgs, means, yerr=err, capsize=4, color="#4c72b0")
            ax.set_ylabel(f"{label} (mean, 95% CI)")
            ax.set_title(title, fontsize=9)
            ax.tick_params(axis="x", rotation=30)
            fig.tight_layout()
            path = out_dir / f"{slug}_{m}.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            paths.append(str(path))
        fig, ax = plt.subplots(figsize=(5.5, 4.0))
        for g in ctx_groups:
            eps = [e for e in g["episodes"] if isinstance(e.ticks, int | float)
                   and isinstance(e.comm_tokens_per_step, int | float)]
            ax.scatter([e.comm_tokens_per_step for e in eps], [e.ticks for e in eps],
                       label=str(g["organization"]), alpha=0.7)
        ax.set_xlabel("comm tokens / step")
        ax.set_ylabel("ticks")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{slug}_scatter.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(str(path))
    return paths
