"""The Criticize-Reflect loop: play, criticize, reflect, repeat; saved as it goes.

Each iteration ``k`` plays one episode or several (``episode_fn(organization, k)``; the
paper's loop played one) under the current organization, scores them with the mean of
:func:`~orgteams.criticize_reflect.cost.episode_cost` (a failed episode costs at least the
step limit; the formula and weights are recorded with every iteration), has the
:class:`~orgteams.criticize_reflect.critic.Critic` assess a bounded summary (skipped in
the ``use_critic=False`` ablation: reflection without the Critic), and has the
:class:`~orgteams.criticize_reflect.coordinator.Coordinator` pick the organization for
iteration ``k + 1`` from the history sorted by cost (not after the last iteration).

Files under ``out_dir`` (every iteration is written when it ends, so a crash loses at
most the iteration in progress, and a rerun with the same ``out_dir`` resumes after the
last finished one; asking for more iterations continues a finished run):

==============================  ======================================================
``config.json``                 weights, ablation flags and the initial organization
                                (a rerun with different ones is refused)
``iteration_<k>/organization.yaml``  the organization played (``Organization.from_yaml``)
``iteration_<k>/summary.json``  ``{"cost", "episode": full episode summary,
                                "critic_input": bounded summary}``
``iteration_<k>/critique.json`` the :class:`Critique` (``fallback`` set when the
                                Critic's reply was unusable) or ``{"skipped": ...}``
``iteration_<k>/proposal.json`` the Coordinator's decision: candidates with reasons
                                for rejections, pick, fallback
``iteration_<k>/next_organization.yaml``  what iteration ``k + 1`` plays
``history.jsonl``               one JSON object per finished iteration (appended last:
                                it marks the iteration finished)
``best.yaml``                   the lowest-cost organization so far (ties: earliest),
                                reusable on other tasks (``--org best.yaml``)
``best.json``                   ``{"iteration", "cost", "organization"}``
``iteration_<k>/failed.json``   only for an episode that stopped early (``episode_status``
                                ``error`` or ``interrupted``): its summary and reason
==============================  ======================================================

An episode that did not play to its end (its model server was gone, it was
interrupted) is not a result: it is recorded in ``failed.json``, never scored, never
shown to the Critic or Coordinator, and :class:`EpisodeFailed` stops the loop; a rerun
retries that iteration. A screened candidate's episode that was interrupted (the run's
budget was reached, ``stop_reason`` ``max cost``) stops the loop the same way, after
the iteration that was deciding is saved undecided: a rerun decides and screens again.
A corrupted line in the middle of ``history.jsonl`` is skipped with a warning naming the
file and line; the iterations after it are kept.

The loop stops before ``iterations`` when the Coordinator's decision is ``exhausted``
(every candidate it could propose was invalid or resolves to the same behaviour as an
organization already played or screened): playing the current organization again
would only repeat it. The last history row's decision says so, and
:attr:`ReflectResult.stopped` gives the reason; a rerun does not play it either.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgteams.agents.records import DecisionLine
from orgteams.agents.team import agent_ids
from orgteams.criticize_reflect.coordinator import Coordinator, CoordinatorDecision, Trial
from orgteams.criticize_reflect.cost import CostModel, episode_cost
from orgteams.criticize_reflect.critic import Critique
from orgteams.criticize_reflect.summary import summarize_episode
from orgteams.criticize_reflect.trials import mean_metrics, play
from orgteams.errors import UserError
from orgteams.organizations.rounds.episode_log import EventLine
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.organizations.rounds.status import why_stopped
from orgteams.organizations.spec.organization import Organization

__all__ = ["HISTORY_METRICS", "EpisodeFailed", "ReflectResult", "episode_cost",
           "finished_iterations", "reflect"]

HISTORY_METRICS = ("success", "ticks", "rounds", "comm_tokens_per_step",
                   "message_tokens_delivered", "units_done", "units_total", "fallback_count",
                   "llm_prompt_tokens", "llm_completion_tokens", "seed", "task", "layout",
                   "log_path")
"""Episode-summary keys kept in each ``history.jsonl`` row (those present)."""


class EpisodeFailed(RuntimeError):
    """An iteration's episode stopped early; it is recorded, not scored (rerun to retry).

    Attributes:
        finished: The iterations finished (and kept) in the run's folder.
    """

    finished: int = 0


EpisodeFn = Callable[[Organization, int], Any]
"""``(organization, iteration) -> EpisodeResult`` (or a mapping with summary and records)."""


@dataclass
class ReflectResult:
    """The outcome of :func:`reflect` (also on disk under ``out_dir``)."""

    out_dir: Path
    history: list[dict[str, Any]]
    best: Organization
    best_iteration: int
    best_cost: float
    resumed_from: int = 0
    ran: list[int] = field(default_factory=list)
    stopped: str | None = None
    """Why the loop ended before its iterations (the Coordinator was exhausted), or None."""

    def coordinator_failure(self) -> str | None:
        """One line when every Coordinator model call of the run fell back (a failed
        server, replies never valid): the organization was never revised by the model.
        None otherwise, also when no model was asked (one iteration) and for the
        heuristic Coordinator, whose fallback ("no untried edit is valid") is an answer."""
        asked = [row["decision"] for row in self.history
                 if row.get("decision") and row["decision"].get("call")]
        if not asked or any(d.get("fallback") is None for d in asked):
            return None
        last = " ".join(str(asked[-1]["fallback"]).split())
        last = last if len(last) <= 200 else last[:197] + "..."
        return (f"every Coordinator call fell back ({len(asked)} of {len(asked)}; last: "
                f"{last}); the organization was never revised. Results are kept in "
                f"{self.out_dir}")

    def to_dict(self) -> dict[str, Any]:
        """One JSON-ready object: the best organization and a compact history."""
        return {
            "out_dir": str(self.out_dir), "iterations_done": len(self.history),
            "stopped": self.stopped,
            "resumed_from": self.resumed_from, "ran": self.ran,
            "best": {"iteration": self.best_iteration, "cost": self.best_cost,
                     "organization": self.best.name, "path": str(self.out_dir / "best.yaml")},
            "history": [{
                "iteration": row["iteration"], "organization": row["organization_name"],
                "cost": row["cost"], **{k: row["metrics"].get(k) for k in
                                        ("success", "ticks", "comm_tokens_per_step")},
                "critic_fallback": (row["critique"] or {}).get("fallback"),
                "critic_used": row["critique"] is not None,
                "next_organization": row["next_organization_name"],
                "coordinator_fallback": (row["decision"] or {}).get("fallback"),
                "rejected": sum(not c["valid"] for c in (row["decision"] or {}).get(
                    "candidates", [])),
            } for row in self.history],
        }


def _write(path: Path, text: str) -> None:
    """Write atomically (a crash leaves the old file or the new one, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def _read_history(path: Path) -> list[dict[str, Any]]:
    """Finished iterations in order. A torn last line (crash while appending) is cut
    from the file; an unreadable line elsewhere is skipped with a warning and the
    iterations after it are kept (the file is left as it is)."""
    if not path.is_file():
        return []
    data = path.read_text(encoding="utf-8")
    lines = data.split("\n")
    by_iteration: dict[int, dict[str, Any]] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("iteration"), int):
                raise ValueError("not a history row")
        except ValueError:
            if i == len(lines) - 1:  # no newline after it: the append a crash cut short
                _write(path, data[: len(data) - len(line)])
                continue
            warnings.warn(f"{path}:{i + 1}: unreadable history line skipped (the other "
                          "iterations are kept)", stacklevel=3)
            continue
        by_iteration[row["iteration"]] = row
    return [by_iteration[k] for k in sorted(by_iteration)]


def finished_iterations(out_dir: str | Path) -> int:
    """How many iterations of the run in ``out_dir`` are finished (0: none yet)."""
    return len(_read_history(Path(out_dir) / "history.jsonl"))


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _trial(row: dict[str, Any]) -> Trial:
    critique = row.get("critique")
    return Trial(iteration=row["iteration"], cost=row["cost"], metrics=row["metrics"],
                 organization=Organization.from_dict(row["organization"], source="history"),
                 critique=Critique.model_validate(critique) if critique else None)


def _check_config(path: Path, config: dict[str, Any]) -> None:
    if not path.is_file():
        _write(path, _dump(config))
        return
    saved = json.loads(path.read_text(encoding="utf-8"))
    changed = [k for k in config if saved.get(k) != config[k]]
    if changed:
        raise UserError(f"{path.parent}: already holds a reflect run with different "
                        f"{', '.join(changed)}; use another out_dir to start a new run")


def reflect(initial_org: Organization, episode_fn: EpisodeFn, critic: Any | None,
            coordinator: Any, iterations: int = 3, out_dir: str | Path = "runs/reflect",
            step_weight: float = 1.0, token_weight: float = 1.0, use_critic: bool = True,
            approved: bool = False, budget_chars: int = 6000, failure_penalty: float = 0.0,
            screen_candidates: bool = False) -> ReflectResult:
    """Run (or resume) the Criticize-Reflect loop for ``iterations`` iterations in all.

    Args:
        initial_org: The organization of iteration 0.
        episode_fn: Plays an iteration: ``episode_fn(organization, iteration)`` returns
            an ``EpisodeResult`` (or a mapping with ``summary`` and ``records``), or a
            list of them (several seeds: the iteration costs their mean); a summary needs
            ``ticks`` and ``comm_tokens_per_step`` (and ``success``, ``step_limit``).
        critic: Assesses each iteration; not called (may be None) when ``use_critic`` is
            False. An LLM :class:`Critic` or a heuristic one (same ``criticize``).
        coordinator: Picks the next organization (same ``propose`` for every kind).
        iterations: Iterations in all, counting those already finished in ``out_dir``.
        out_dir: Where everything is saved (see the module docstring).
        step_weight, token_weight, failure_penalty: The :class:`CostModel`.
        use_critic: False for the ablation "reflection without the Critic".
        approved: A human approved changes to ``needs_approval`` fields.
        budget_chars: Size bound of the Critic's episode summary (JSON characters).
        screen_candidates: Play every valid candidate on the next iteration's episodes
            and play the cheapest (the decision records each one's cost); False: the
            Coordinator's pick is played (the paper's loop).

    Raises:
        UserError: ``out_dir`` holds a run with other weights, flags or initial
            organization; ``iterations < 1``.
    """
    if iterations < 1:
        raise UserError(f"iterations must be >= 1, got {iterations}")
    if use_critic and critic is None:
        raise ValueError("use_critic=True needs a critic")
    model = CostModel(step_weight, token_weight, failure_penalty)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {"step_weight": step_weight, "token_weight": token_weight, "use_critic": use_critic,
              "approved": approved, "initial_organization": initial_org.model_dump(mode="json")}
    if failure_penalty or screen_candidates:  # older runs' config.json stay resumable
        config.update(failure_penalty=failure_penalty, screen_candidates=screen_candidates)
    _check_config(out / "config.json", config)
    history_path = out / "history.jsonl"
    rows = _read_history(history_path)
    start = rows[-1]["iteration"] + 1 if rows else 0
    resumed_from = start
    ran: list[int] = []
    current = initial_org
    team: list[str] | None = None
    screened: dict[tuple[int, str], list] = {}
    ctx = _Context(episode_fn, model, screen_candidates, screened, out)
    if rows:
        last = rows[-1]
        team = last.get("team")
        if last["next_organization"] is None and start < iterations:
            decision = _propose(coordinator, rows, _played(last), approved, team, start)
            _record_decision(out, last, decision, ctx, start)
            _write(history_path, "".join(json.dumps(r, default=str) + "\n" for r in rows))
        current = (Organization.from_dict(last["next_organization"], source="history")
                   if last["next_organization"] else _played(last))

    stopped = _exhausted(rows[-1]) if rows else None
    for k in range(start, iterations if stopped is None else start):
        episodes = screened.pop((k, current.to_yaml()), None) or play(episode_fn, current, k)
        for summary, _ in episodes:
            _refuse_unfinished(out / f"iteration_{k}", current, summary, k, len(rows))
        summaries = [s for s, _ in episodes]
        summary, records = episodes[0]
        n = summary.num_agents
        team = agent_ids(int(n)) if n else sorted(
            {str(a) for r in records if (a := _agent_of(r))}) or None
        cost = model.mean_cost(summaries)
        metrics = mean_metrics(summaries, HISTORY_METRICS)
        bounded = summarize_episode(records, summary.with_values(**{
            k2: v for k2, v in metrics.items()
            if isinstance(v, int | float) and k2 in EpisodeSummary.keys()}),
            budget_chars=budget_chars)
        critique = (critic.criticize(current, bounded, cost, team={a: a for a in team or []})
                    if use_critic and critic is not None else None)
        folder = out / f"iteration_{k}"
        per_episode = [{"seed": s.value("seed"), "cost": model.cost(s),
                        "success": s.value("success"), "ticks": s.value("ticks"),
                        "comm_tokens_per_step": s.value("comm_tokens_per_step")}
                       for s in summaries]
        _write(folder / "organization.yaml", current.to_yaml())
        _write(folder / "summary.json", _dump({"cost": cost, "cost_model": model.to_dict(),
                                               "episodes": per_episode,
                                               "episode": summary.to_dict(),
                                               "critic_input": bounded}))
        _write(folder / "critique.json", _dump(
            critique.model_dump(mode="json") if critique is not None
            else {"skipped": "use_critic=False (reflection without the Critic)"}))
        row: dict[str, Any] = {
            "iteration": k, "organization_name": current.name,
            "organization": current.model_dump(mode="json", by_alias=True), "cost": cost,
            "cost_model": model.to_dict(), "episodes": per_episode, "metrics": metrics,
            "critique": critique.model_dump(mode="json") if critique is not None else None,
            "team": team, "decision": None, "next_organization": None,
            "next_organization_name": None,
        }
        if k + 1 < iterations:
            ctx.finished = len(rows) + 1
            try:
                decision = _propose(coordinator, [*rows, row], current, approved, team, k + 1)
                _record_decision(out, row, decision, ctx, k + 1)
            except EpisodeFailed:  # screening was interrupted: keep the iteration, undecided
                rows.append(row)
                _append(history_path, row)
                _export_best(out, rows)
                raise
        rows.append(row)
        _append(history_path, row)
        _export_best(out, rows)
        ran.append(k)
        if row["next_organization"]:
            current = Organization.from_dict(row["next_organization"], source="decision")
        stopped = _exhausted(row)
        if stopped is not None:
            break

    best_row = _export_best(out, rows)
    return ReflectResult(out_dir=out, history=rows,
                         best=Organization.from_dict(best_row["organization"], source="history"),
                         best_iteration=best_row["iteration"], best_cost=best_row["cost"],
                         resumed_from=resumed_from, ran=ran, stopped=stopped)


def _exhausted(row: dict[str, Any]) -> str | None:
    """Why the loop stops after ``row`` (its decision was exhausted), else None."""
    decision = row.get("decision") or {}
    if not decision.get("exhausted"):
        return None
    return (f"stopped after iteration {row['iteration']}: {decision.get('fallback')} "
            "(every candidate is invalid or behaves as an organization already tried)")


@dataclass
class _Context:
    """What deciding the next organization needs besides the Coordinator."""

    episode_fn: EpisodeFn
    model: CostModel
    screen: bool
    screened: dict[tuple[int, str], list]
    out: Path
    finished: int = 0


def _screen(ctx: _Context, decision: CoordinatorDecision, next_iteration: int) -> None:
    """Play every valid candidate on the next iteration's episodes; keep the cheapest
    (ties: the Coordinator's order, its pick first). Their episodes are reused when the
    chosen one plays, so screening costs K - 1 extra plays per iteration. A candidate
    whose episode failed is scored as stopped early; one whose episode was interrupted
    (the run was asked to stop: its budget) stops the loop (:class:`EpisodeFailed`)."""
    options = list(decision.options) or [decision.organization]
    picked = decision.organization
    options.sort(key=lambda o: o is not picked)
    scores = []
    for org in options:
        episodes = play(ctx.episode_fn, org, next_iteration)
        for summary, _ in episodes:
            if summary.episode_status == "interrupted":
                _refuse_unfinished(ctx.out / f"iteration_{next_iteration}", org, summary,
                                   next_iteration, ctx.finished)
        if any(not s.complete for s, _ in episodes):
            scores.append({"name": org.name, "cost": None, "status": "stopped early"})
            continue
        cost = ctx.model.mean_cost([s for s, _ in episodes])
        scores.append({"name": org.name, "cost": cost,
                       "organization": org.model_dump(mode="json", by_alias=True)})
        ctx.screened[(next_iteration, org.to_yaml())] = episodes
    scored = [(s["cost"], i) for i, s in enumerate(scores) if s["cost"] is not None]
    if scored:
        best = options[min(scored)[1]]
        if best is not picked:
            decision.pick_reason += f"; screened: {best.name} cost least"
        decision.organization = best
    decision.screened = scores
    for key in [key for key in ctx.screened if key[1] != decision.organization.to_yaml()]:
        ctx.screened.pop(key)


def _agent_of(line: Any) -> str | None:
    """The agent a line names: a decision's, or the one an event (a shock) names."""
    return line.agent if isinstance(line, DecisionLine) else (
        line.get("agent") if isinstance(line, EventLine) else None)


def _refuse_unfinished(folder: Path, organization: Organization, summary: EpisodeSummary,
                       k: int, finished: int) -> None:
    """Record and raise for an episode that stopped early; clear a stale record."""
    if summary.complete:
        (folder / "failed.json").unlink(missing_ok=True)
        return
    status = summary.episode_status
    reason = why_stopped(summary)
    _write(folder / "organization.yaml", organization.to_yaml())
    _write(folder / "failed.json", _dump({"episode_status": status,
                                           "stop_reason": summary.stop_reason,
                                           "stop_detail": summary.stop_detail,
                                           "episode": summary.to_dict()}))
    failed = EpisodeFailed(f"iteration {k}: the episode stopped early ({status}: {reason}); "
                           f"it is not scored. Recorded in {folder / 'failed.json'}; the "
                           f"{finished} finished iteration(s) are kept; rerun to retry it")
    failed.finished = finished
    raise failed


def _played(row: dict[str, Any]) -> Organization:
    """The organization a history row played."""
    return Organization.from_dict(row["organization"], source="history")


def _propose(coordinator: Coordinator, rows: list[dict[str, Any]], current: Organization,
             approved: bool, team: list[str] | None, next_iteration: int
             ) -> CoordinatorDecision:
    """The Coordinator's decision; the candidates screened before (played, not kept in
    the history) count as tried, so one that behaves as them is not played again."""
    screened = [Organization.from_dict(s["organization"], source="screened")
                for r in rows for s in (r.get("decision") or {}).get("screened") or []
                if s.get("organization")]
    return coordinator.propose([_trial(r) for r in rows], current, approved=approved,
                               team=team, iteration=next_iteration, screened=screened)


def _record_decision(out: Path, row: dict[str, Any], decision: CoordinatorDecision,
                     ctx: _Context | None = None, next_iteration: int = 0) -> None:
    if ctx is not None and ctx.screen and decision.fallback is None:
        _screen(ctx, decision, next_iteration)
    folder = out / f"iteration_{row['iteration']}"
    data = decision.to_dict()
    _write(folder / "proposal.json", _dump(data))
    _write(folder / "next_organization.yaml", decision.organization.to_yaml())
    row["decision"] = {k: v for k, v in data.items() if k != "organization"}
    row["next_organization"] = data["organization"]
    row["next_organization_name"] = decision.organization.name


def _export_best(out: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    best = min(rows, key=lambda r: (r["cost"], r["iteration"]))
    org = Organization.from_dict(best["organization"], source="history")
    _write(out / "best.yaml", org.to_yaml())
    _write(out / "best.json", _dump({"iteration": best["iteration"], "cost": best["cost"],
                                     "organization": org.name}))
    return best
