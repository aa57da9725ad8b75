"""Building and checking one proposed organization (the Coordinator's and the heuristic's).

A proposal changes editable fields of the current organization. A candidate is built
with :meth:`Organization.updated` (full validation), checked against governance
(:meth:`Organization.governance_violations`: human-only fields never change;
needs-approval fields only with ``approved=True``) and resolved for the team
(instruction templates render). Model-written text is data: an instruction becomes
plain text (:func:`plain_instruction`), and every other string a proposal sets must be
one short line, every list short (they reach prompts outside the quoted instruction).

A candidate that resolves to the same behaviour as an organization already tried
(:meth:`~orgteams.organizations.spec.resolved.ResolvedOrganization.behaviour`: not only
the same name or fields, e.g. a report rule edited once nobody can message) is
recognised by :func:`already_tried` and skipped before any episode plays it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orgteams.criticize_reflect.rule_edits import merged_rules
from orgteams.organizations.spec.organization import INSTRUCTION_VARIABLES, Organization

if TYPE_CHECKING:  # the proposal model lives with the Coordinator that asks for it
    from orgteams.criticize_reflect.coordinator import OrganizationProposal

__all__ = ["FIELD_LIST_MAX_ITEMS", "FIELD_TEXT_MAX_CHARS", "INSTRUCTION_MAX_CHARS",
           "already_tried", "behaviour_of", "build_candidate",
           "tried_behaviours", "plain_instruction"]

INSTRUCTION_MAX_CHARS = 3000
"""Longest instruction a candidate may have (checked in :func:`build_candidate`, not in the
JSON schema: a long ``maxLength`` becomes a grammar too deep for llama.cpp)."""


def build_candidate(base: Organization, proposal: OrganizationProposal, *, name: str,
                    approved: bool = False, team: list[str] | None = None
                    ) -> tuple[Organization | None, str | None]:
    """Build and check one proposal against ``base``.

    Returns:
        ``(organization, None)`` when valid, else ``(None, reason)`` where reason starts
        with ``invalid:``, ``governance:`` or ``needs approval:``.
    """
    changes = proposal.changes()
    if proposal.rules is not None:  # only the rules it names change
        changes["rules"] = merged_rules(base.rules, proposal.rules)
    if len(changes.get("instruction") or "") > INSTRUCTION_MAX_CHARS:
        return None, f"invalid: instruction longer than {INSTRUCTION_MAX_CHARS} characters"
    problem = _text_problem({k: v for k, v in changes.items() if k != "instruction"})
    if problem:
        return None, f"invalid: {problem}"
    if changes.get("instruction") is not None:
        # A model's instruction is plain text, never a template (here, and wherever its
        # saved organization.yaml is loaded again): only {me}-style names are replaced.
        text, problem = plain_instruction(changes["instruction"])
        if problem:
            return None, f"invalid: field 'instruction': {problem}"
        changes.update(instruction=text, instruction_format="plain")
    if proposal.leader is not None:
        topology = dict(changes.get("topology") or base.topology.model_dump(mode="json"))
        tiers = list(topology.get("tiers") or [])
        if topology.get("kind") != "tiers" or len(tiers) < 2:
            return None, ("invalid: 'leader' needs a topology of kind 'tiers' with a leader "
                          "tier and a members tier")
        first = {k: v for k, v in dict(tiers[0]).items() if k != "count"}
        tiers[0] = {**first, "agents": [proposal.leader]}
        changes["topology"] = {**topology, "tiers": tiers}
    try:
        org = base.updated(name=name, **changes)
    except ValueError as exc:
        return None, f"invalid: {exc}"
    violations = base.governance_violations(org, approved=approved)
    human = [f for f in violations if f in base.governance.human_only]
    if human:
        return None, f"governance: changes human-only field(s) {', '.join(human)}"
    if violations:
        return None, (f"needs approval: changes field(s) {', '.join(violations)} that need "
                      "human approval (run with approved=True)")
    if team is not None:
        try:
            org.resolve(team)
        except Exception as exc:  # noqa: BLE001 - any resolve/render failure rejects it
            return None, f"invalid: does not resolve for {len(team)} agents: {exc}"
    return org, None


def behaviour_of(org: Organization, team: list[str] | None, reads_prompts: bool = True
                 ) -> str:
    """What playing ``org`` depends on for ``team`` (its resolved behaviour, see
    :meth:`~orgteams.organizations.spec.resolved.ResolvedOrganization.behaviour`);
    without a team, its fields but name and description. ``reads_prompts``: the team
    has members that read the instruction (model or human members)."""
    if team:
        try:
            return org.resolve(team).behaviour(reads_prompts)
        except Exception:  # noqa: BLE001 - unresolvable for this team: compare its fields
            pass
    return org.model_dump_json(exclude={"name", "description"})


def tried_behaviours(history: Sequence[Any], screened: Sequence[Organization],
                     team: list[str] | None, reads_prompts: bool = True) -> dict[str, str]:
    """Behaviour -> which organization played it first: the history's trials
    and the candidates screened before (played, but not kept in the history)."""
    tried: dict[str, str] = {}
    for t in sorted(history, key=lambda t: t.iteration):
        tried.setdefault(behaviour_of(t.organization, team, reads_prompts),
                         f"{t.organization.name} (iteration {t.iteration})")
    for org in screened:
        tried.setdefault(behaviour_of(org, team, reads_prompts), f"{org.name} (screened)")
    return tried


def already_tried(org: Organization, tried: dict[str, str], team: list[str] | None,
                  reads_prompts: bool = True) -> str | None:
    """The skip reason when ``org`` behaves as one of ``tried`` (see
    :func:`tried_behaviours`), else None; when None, ``org`` is added to ``tried`` as a
    candidate of this decision."""
    key = behaviour_of(org, team, reads_prompts)
    if key in tried:
        return f"skipped: resolves to the same behaviour as {tried[key]}; not played again"
    tried[key] = f"{org.name} (a candidate of this decision)"
    return None


FIELD_TEXT_MAX_CHARS = 300
"""Longest string (a rule, a role, a mission...) a proposal may set outside the instruction."""
FIELD_LIST_MAX_ITEMS = 30
"""Most items of a list (rules, channels, tiers) a proposal may set."""


def _text_problem(value: Any, where: str = "") -> str | None:
    """Why a proposal's field values are unfit for prompts: a multi-line or long string
    (roles and rules reach prompts outside the quoted instruction), or a long list."""
    if isinstance(value, str):
        if len(value.splitlines()) > 1 or len(value) > FIELD_TEXT_MAX_CHARS:
            return (f"field '{where}': must be one line of at most {FIELD_TEXT_MAX_CHARS} "
                    "characters")
        return None
    if isinstance(value, dict):
        items = [(f"{where}.{k}" if where else str(k), v) for k, v in value.items()]
        items += [(f"{where}.{k}" if where else str(k), k) for k in value]
    elif isinstance(value, list | tuple):
        if len(value) > FIELD_LIST_MAX_ITEMS:
            return f"field '{where}': at most {FIELD_LIST_MAX_ITEMS} items"
        items = [(f"{where}.{i}", v) for i, v in enumerate(value)]
    else:
        return None
    for path, item in items:
        problem = _text_problem(item, path)
        if problem:
            return problem
    return None


_SIMPLE_VARIABLE = re.compile(r"\{\{-?\s*([a-z_]+)\s*-?\}\}")


def plain_instruction(text: str) -> tuple[str, str | None]:
    """A model's instruction as plain text: ``{{ me }}`` becomes ``{me}``; other syntax refused.

    Returns:
        ``(text, None)``, or ``(text, problem)`` when template syntax is left.
    """
    text = _SIMPLE_VARIABLE.sub(
        lambda m: f"{{{m.group(1)}}}" if m.group(1) in INSTRUCTION_VARIABLES else m.group(0),
        text)
    found = sorted((text.find(tag), tag) for tag in ("{{", "{%", "{#") if tag in text)
    if found:
        return text, (f"template syntax {found[0][1]!r} is not allowed in an instruction a model "
                      f"writes; write plain text with {{me}}, {{role}}, {{leader}}, {{boss}}, "
                      f"{{reports}}, {{names}} or {{n}}")
    return text, None
