"""The offline ``heuristic`` Critic and Coordinator: rules, no model.

The :class:`HeuristicCritic` derives problems from an iteration's metrics and events
(:data:`PROBLEMS`, each with the threshold that raises it); the
:class:`HeuristicCoordinator` proposes up to K edits (:data:`EDITS`: the organization's
machine-readable rules, protocol, channels, leader, abstention) that address those
problems, skips organizations already played, and checks each candidate exactly as
the LLM Coordinator's are
(:func:`~orgteams.criticize_reflect.coordinator.build_candidate`: validation,
governance, resolution for the team). Both answer the same types as their LLM counterparts, so the
loop, its files and its ablations do not know which kind ran. They are a baseline and
an ablation beside the LLM ones, and make the loop demonstrable without a model.

A rules edit names only the rules it changes (``{"rules": {"assign_work": "claim"}}``);
the others are kept (:mod:`~orgteams.criticize_reflect.rule_edits`). ``allow_abstain``
is human-only by default (the right to abstain, ring 1), so that edit is refused by
governance unless a person allows it; the candidates' rows say so.
"""

from __future__ import annotations

from typing import Any

from orgteams.criticize_reflect.candidates import already_tried, tried_behaviours
from orgteams.criticize_reflect.coordinator import (
    CoordinatorDecision,
    OrganizationProposal,
    Trial,
    build_candidate,
)
from orgteams.criticize_reflect.critic import Critique
from orgteams.criticize_reflect.rule_edits import slug_of
from orgteams.errors import UserError
from orgteams.organizations.spec.organization import Organization

__all__ = ["EDITS", "PROBLEMS", "HeuristicCoordinator", "HeuristicCritic", "problems_of"]

CHATTER_TOKENS_PER_STEP = 2.0
"""Message tokens sent per tick above which talk counts as chatter (planners' messages
change nothing they do, so any sizeable amount is cost without effect)."""
DUPLICATE_RATE = 0.1
"""Share of duplicated decisions above which work counts as duplicated."""
FAILED_ACTION_SHARE = 0.25
"""Share of an agent's actions that failed above which it counts as idle."""
ABSTENTION_RATE = 0.2
"""Abstention rate above which agents count as idle."""

PROBLEMS = {
    "failure": "the task was not finished within the step limit",
    "duplicated_work": f"duplicate_rate above {DUPLICATE_RATE}: agents redo each other's work",
    "idle_agents": (f"an agent's failed actions above {FAILED_ACTION_SHARE:.0%} of its actions, "
                    f"or abstention_rate above {ABSTENTION_RATE}"),
    "chatter": (f"more than {CHATTER_TOKENS_PER_STEP} message tokens sent per tick: talk that "
                "costs more than it changes"),
    "late_reports": "messages reach agents only after fallbacks or failed actions pile up",
}
"""Problem code -> when the heuristic Critic raises it."""

EDITS: dict[str, list[dict[str, Any]]] = {
    "chatter": [{"channels": "topology"}, {"channels": "none"},
                {"rules": {"report_when": "on_completion"}},
                {"rules": {"budget": {"messages": 1}}}, {"rules": {"report_to": "leader"}},
                {"protocol": "sequential"}],
    "duplicated_work": [{"rules": {"assign_work": "claim"}},
                        {"rules": {"assign_work": "leader"}}, {"protocol": "leader_first"},
                        {"protocol": "shared"}, {"channels": "all"}],
    "idle_agents": [{"allow_abstain": False}, {"rules": {"assign_work": "self"}},
                    {"rules": {"corrections": True}}, {"protocol": "broadcast"},
                    {"protocol": "shared"}],
    "late_reports": [{"channels": "topology"}, {"rules": {"report_when": "on_new_information"}},
                     {"rules": {"corrections": True}}, {"protocol": "coordinator"}],
    "failure": [{"protocol": "shared"}, {"channels": "all"}, {"rules": {"corrections": True}},
                {"leader": "agent_1"}],
    "explore": [{"protocol": "shared"}, {"protocol": "broadcast"},
                {"rules": {"assign_work": "claim"}}, {"rules": {"report_when": "on_completion"}},
                {"leader": "agent_1"},
                {"leader": "agent_2"}, {"channels": "topology"}, {"channels": "none"}],
}
"""Problem code -> edits that address it, best first: duplicated work -> claims or the
leader assigns; chatter -> fewer channels, reports on completion only, a budget, reports to
the leader; idle agents -> no abstention (governance permitting) or everyone picks its own
work; late reports -> reports as soon as there is news, corrections (``explore``: when no
problem was found, or every edit for the problems found was already played)."""


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def problems_of(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """``(code, evidence)`` for each problem of :data:`PROBLEMS` that a bounded episode
    summary (or a history row's metrics) shows, most serious first."""
    metrics = summary.get("metrics", summary)
    found: list[tuple[str, str]] = []
    success = metrics.get("success")
    if success is not None and float(success) < 1:
        found.append(("failure", f"success {float(success):.2f} (ticks {metrics.get('ticks')}, "
                                 f"step limit {metrics.get('step_limit')})"))
    dup = _num(metrics.get("duplicate_rate"))
    if dup is not None and dup > DUPLICATE_RATE:
        found.append(("duplicated_work", f"duplicate_rate {dup:.2f}"))
    idle = [name for name, a in (summary.get("agents") or {}).items()
            if a.get("actions") and a.get("failed_actions", 0) / a["actions"] > FAILED_ACTION_SHARE]
    abstain = _num(metrics.get("abstention_rate"))
    if idle or (abstain is not None and abstain > ABSTENTION_RATE):
        found.append(("idle_agents", f"agents with many failed actions: {idle}; abstention_rate "
                                     f"{abstain}"))
    tokens = _num(metrics.get("comm_tokens_per_step"))
    if tokens is not None and tokens > CHATTER_TOKENS_PER_STEP:
        found.append(("chatter", f"{tokens:.2f} message tokens sent per tick"))
    fallbacks = _num(metrics.get("fallback_count"))
    if fallbacks and fallbacks > 0 and metrics.get("messages_sent"):
        found.append(("late_reports", f"{fallbacks:.0f} fallbacks while messages were sent"))
    return found


class HeuristicCritic:
    """Critic by rules: problems (and their codes) from the metrics and events."""

    def __init__(self) -> None:
        self.calls = 0

    def criticize(self, organization: Organization, summary: dict[str, Any], cost: float,
                  team: dict[str, str] | None = None) -> Critique:
        """A :class:`Critique` whose ``problems`` are the evidence and ``codes`` the
        problem codes; ``suggestions`` name the first edit for each code."""
        self.calls += 1
        found = problems_of(summary)
        return Critique(
            summary=f"cost {cost:.2f}; {len(found)} problem(s) found by rule",
            problems=[f"{code}: {evidence}"[:300] for code, evidence in found][:10],
            suggestions=[f"{code}: set {EDITS[code][0]}" for code, _ in found][:10],
            codes=[code for code, _ in found])


class HeuristicCoordinator:
    """Coordinator by rules: K edits for the latest iteration's problems.

    Each candidate is one edit of the best organization so far (hill climbing); its name
    is the start's plus the latest edit, its description appends every edit, so
    ``best.yaml`` says which edits it carries.

    An edit whose organization resolves to the same behaviour as one already played
    (or proposed) is skipped with its reason (``skipped: resolves to the same behaviour
    as ...``) and the next edit is tried: no episode plays it.

    Args:
        k: Candidates proposed each time.
        reads_prompts: The team has members that read the instruction (model or human
            members); False for planner, random and policy teams, for which an edit
            of the instruction's text alone changes nothing.
    """

    def __init__(self, k: int = 3, reads_prompts: bool = True) -> None:
        if k < 1:
            raise UserError(f"k must be >= 1, got {k}")
        self.k = k
        self.reads_prompts = reads_prompts
        self.calls = 0

    def propose(self, history: list[Trial], current: Organization, *, approved: bool = False,
                team: list[str] | None = None, iteration: int | None = None,
                screened: list[Organization] = ()) -> CoordinatorDecision:
        """Edits of the best organization so far addressing the latest critique's problem
        codes. Without a usable critique (the Critic ablated, or its reply fell back) it
        has no diagnosis: it explores untargeted edits (``EDITS["explore"]``) by cost
        alone, so the ablation without the Critic really lacks the Critic's work.
        ``screened``: candidates the loop played before without keeping them in the
        history; like the history's, their behaviours are not proposed again."""
        self.calls += 1
        latest = max(history, key=lambda t: t.iteration)
        base = min(history, key=lambda t: (t.cost, t.iteration)).organization
        critiqued = latest.critique is not None and latest.critique.fallback is None
        codes = list(latest.critique.codes) if critiqued else []
        tried = tried_behaviours(history, screened, team, self.reads_prompts)
        rows: list[dict[str, Any]] = []
        options: list[Organization] = []
        for code in [*codes, "explore"]:
            for edit in EDITS[code]:
                if len(options) >= self.k:
                    break
                slug = slug_of(edit)
                name = f"{base.name.split('__')[0]}__{slug}"[:40]
                if any(r["changes"] == edit for r in rows):
                    continue
                described = f"{base.description} Edit: {slug}."
                gov = base.governance
                free = "description" not in [*gov.human_only, *gov.needs_approval]
                proposal = OrganizationProposal(**edit, description=(
                    described if len(described) <= 200 else "..." + described[-197:])
                    if free else None)
                org, reason = build_candidate(base, proposal, name=name, approved=approved,
                                              team=team)
                if org is not None:
                    skipped = already_tried(org, tried, team, self.reads_prompts)
                    if skipped:
                        org, reason = None, skipped
                rows.append({"attempt": 1, "index": len(rows), "name": name,
                             "rationale": f"addresses {code}", "changes": edit,
                             "valid": org is not None, "reason": reason})
                if org is not None:
                    options.append(org)
        analysis = (f"problems: {', '.join(codes) or 'none'}" if critiqued
                    else "no critique: untargeted edits") + f"; edits of {base.name}"
        if not options:
            reason = "no untried edit is valid"
            return CoordinatorDecision(organization=current, candidates=rows,
                                       pick_reason=f"fallback: {reason}", analysis=analysis,
                                       fallback=reason, exhausted=True)
        pick = next(r["index"] for r in rows if r["valid"])
        return CoordinatorDecision(organization=options[0], candidates=rows, pick=pick,
                                   pick_reason="first edit for the most serious problem",
                                   analysis=analysis, options=options)
