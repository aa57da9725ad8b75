"""The Coordinator: proposes K candidate organizations and picks one for the next episode.

It reads the history of played organizations sorted by cost (lowest first), each with
its metrics and (unless the Critic is ablated) its critique, and answers one JSON
object (:class:`CoordinatorReply`): an analysis, ``candidates`` (each an
:class:`OrganizationProposal`: the editable fields it changes, everything else kept
from the current organization) and ``pick``, the index of the candidate to play next.

Every candidate is built and checked by
:func:`~orgteams.criticize_reflect.candidates.build_candidate` (full validation,
governance, resolution for the team); one that plays exactly like the current
organization (only its name or description differ) is rejected too, and so is one that
resolves to the same behaviour as an organization already played or proposed
(:func:`~orgteams.criticize_reflect.candidates.already_tried`: ``skipped: ...``), before
any episode plays it. Rejected candidates are kept with their reason.

One other shape is read, and recorded in the call's ``repaired``: the single-candidate
form, one proposal's fields at the top level with no ``candidates`` list (``{"name":
..., "rules": ...}``, optionally with ``analysis`` and ``pick``), read as a one-item
``candidates`` list. It goes through the same validation; any other shape is invalid.

Pick rule: the model's ``pick`` if that candidate is valid, else the first valid
candidate in the model's order (the prompt asks for best first). When no candidate of
a reply is valid the model gets the reasons as a correction and a bounded retry; after
that, or on an unparseable reply or backend failure, the decision falls back to the
current organization, with ``fallback`` recorded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from orgteams.agents.backends.base import ChatBackend
from orgteams.agents.llm.schemas import ReplyError
from orgteams.agents.llm.structured import pydantic_parser, structured_call
from orgteams.criticize_reflect.candidates import (
    already_tried,
    build_candidate,
    plain_instruction,
    tried_behaviours,
)
from orgteams.criticize_reflect.critic import Critique
from orgteams.criticize_reflect.rule_edits import RulesEdit
from orgteams.errors import UserError
from orgteams.organizations.protocols.facts import PROTOCOLS
from orgteams.organizations.spec.organization import (
    LEADERSHIP_RULES,
    Organization,
    _BlockDumper,
)

__all__ = ["EDITABLE_FIELDS", "SINGLE_CANDIDATE_READ", "Coordinator", "CoordinatorDecision",
           "CoordinatorReply", "OrganizationProposal", "Trial", "build_candidate",
           "plain_instruction", "single_candidate"]

CRITIQUE_MAX_CHARS = 3000
"""Longest critique (its one-line JSON text) kept per history entry in the prompt."""

EDITABLE_FIELDS = ("description", "protocol", "topology", "roles", "channels", "rules",
                   "allow_abstain", "leadership_rule", "election_every", "leadership_every",
                   "batch_size", "mission", "instruction")
"""Organization fields a proposal may set (governance may still forbid some)."""


class OrganizationProposal(BaseModel):
    """One candidate organization: the fields it changes (None = keep the current value).

    ``leader`` is a shortcut for "this agent leads": it puts that agent id alone in the
    first tier of the (proposed or current) ``tiers`` topology.
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="", max_length=40)
    rationale: str = ""
    leader: str | None = Field(default=None, description="agent id that leads, e.g. agent_1")
    description: str | None = Field(default=None, max_length=200)
    protocol: str | None = Field(default=None, description=f"one of {', '.join(PROTOCOLS)}")
    topology: dict[str, Any] | None = None
    roles: str | dict[str, str] | None = None
    channels: str | list[dict[str, str]] | None = None
    rules: RulesEdit | list[str] | None = Field(
        default=None, description="rules to change (others kept); a list: free-text notes")
    allow_abstain: bool | None = None
    leadership_rule: str | None = Field(
        default=None, description=f"one of {', '.join(LEADERSHIP_RULES)}")
    election_every: int | None = None
    leadership_every: int | None = None
    batch_size: int | None = None
    mission: str | None = None
    instruction: str | None = None

    @field_validator("rationale")
    @classmethod
    def _clip(cls, text: str) -> str:
        return text[:500]

    def changes(self) -> dict[str, Any]:
        """The organization fields this proposal sets (a rules edit as the rules it names)."""
        out = {f: getattr(self, f) for f in EDITABLE_FIELDS if getattr(self, f) is not None}
        if isinstance(self.rules, RulesEdit):
            out["rules"] = self.rules.model_dump(exclude_none=True)
        return out


class CoordinatorReply(BaseModel):
    """The JSON object the Coordinator model must answer."""

    model_config = ConfigDict(extra="forbid")
    analysis: str = ""
    candidates: list[OrganizationProposal] = Field(min_length=1)
    pick: int = Field(default=0, ge=0, description="index of the candidate to play next")

    @field_validator("analysis")
    @classmethod
    def _clip(cls, text: str) -> str:
        return text[:1000]


@dataclass
class Trial:
    """One played organization in the history the Coordinator reads."""

    iteration: int
    organization: Organization
    cost: float
    metrics: dict[str, Any] = field(default_factory=dict)
    critique: Critique | None = None


@dataclass
class CoordinatorDecision:
    """What the Coordinator decided.

    Attributes:
        organization: The organization for the next episode (the current one on fallback).
        candidates: Every proposal seen, as ``{attempt, index, name, rationale, changes,
            valid, reason}`` (``reason`` None for valid ones).
        pick: Index of the chosen candidate in the accepted reply, None on fallback.
        pick_reason: ``"model pick"``, ``"first valid (model pick N invalid)"`` or the fallback.
        analysis: The model's analysis.
        fallback: None, or why the current organization is kept.
        call: The structured call's record.
        options: Every valid candidate organization, in the reply's order.
        screened: When the loop screened the options: each one's ``{name, cost,
            organization}``.
        exhausted: Every candidate it could propose was invalid or behaves as one
            already tried (the heuristic's "no untried edit is valid"): the loop stops,
            since playing the current organization again would repeat a tried behaviour.
    """

    organization: Organization
    candidates: list[dict[str, Any]] = field(default_factory=list)
    pick: int | None = None
    pick_reason: str = ""
    analysis: str = ""
    fallback: str | None = None
    call: dict[str, Any] = field(default_factory=dict)
    options: list[Organization] = field(default_factory=list)
    screened: list[dict[str, Any]] | None = None
    exhausted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the organization as its JSON dump)."""
        return {"organization": self.organization.model_dump(mode="json", by_alias=True),
                "candidates": self.candidates, "pick": self.pick,
                "pick_reason": self.pick_reason, "analysis": self.analysis,
                "fallback": self.fallback, "call": self.call, "screened": self.screened,
                "exhausted": self.exhausted}


def _capped(text: str, limit: int) -> str:
    """Model-written text cut to ``limit`` characters (with a marker) before a prompt keeps it."""
    return text if len(text) <= limit else text[:limit] + " [cut]"


SINGLE_CANDIDATE_READ = ("reply in the single-candidate form (a proposal's fields at the top "
                         "level, no 'candidates' list) read as one candidate")
"""The ``repaired`` note of a reply read by :func:`single_candidate`."""

_PROPOSAL_KEYS = frozenset(OrganizationProposal.model_fields)


def single_candidate(parsed: Any) -> tuple[Any, str | None]:
    """A reply in the single-candidate form as a :class:`CoordinatorReply` object.

    Returns:
        ``(reply object, SINGLE_CANDIDATE_READ)`` when ``parsed`` is an object with no
        ``candidates`` whose keys are proposal fields (at least one) plus optionally
        ``analysis`` and ``pick``; else ``(parsed, None)`` unchanged.
    """
    if not isinstance(parsed, dict) or "candidates" in parsed:
        return parsed, None
    proposal = {k: v for k, v in parsed.items() if k not in ("analysis", "pick")}
    if not proposal or not set(proposal) <= _PROPOSAL_KEYS:
        return parsed, None
    reply = {k: parsed[k] for k in ("analysis", "pick") if k in parsed}
    return {**reply, "candidates": [proposal]}, SINGLE_CANDIDATE_READ


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", text.strip().lower()).strip("_")[:40]


EXAMPLE = {
    "analysis": "Members flood everyone with sightings; the leader should receive reports.",
    "candidates": [{"name": "leader_reports", "rationale": "cut broadcast reports",
                    "rules": ["Members report only new sightings, and only to the leader."]},
                   {"name": "leader_agent_1", "rationale": "agent_1 planned better",
                    "leader": "agent_1"},
                   {"name": "claim_work", "rationale": "two agents fetched the same cupcake",
                    "rules": {"assign_work": "claim", "budget": {"messages": 2}}}],
    "pick": 0,
}


class Coordinator:
    """Proposes ``k`` candidate organizations and picks one.

    Args:
        backend: The chat model.
        k: Candidates asked for (extra ones in a reply are ignored and noted).
        max_history: History entries shown (the lowest-cost ones, plus the latest).
        max_retries: Extra attempts after an invalid reply or one with no valid candidate.
        max_tokens: Completion budget per attempt.
        reads_prompts: The team has members that read the instruction (model or human
            members): an instruction edit alone is a new behaviour.
    """

    def __init__(self, backend: ChatBackend, *, k: int = 3, max_history: int = 6,
                 max_retries: int = 1, max_tokens: int = 2048, templates: Any = None,
                 reads_prompts: bool = True) -> None:
        if k < 1:
            raise UserError(f"k must be >= 1, got {k}")
        self.backend = backend
        self.k = k
        self.max_history = max_history
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.templates = templates
        self.reads_prompts = reads_prompts
        self.calls = 0

    def shown_history(self, history: list[Trial]) -> list[Trial]:
        """The entries in the prompt: lowest cost first, at most ``max_history`` (+ latest)."""
        ranked = sorted(history, key=lambda t: (t.cost, t.iteration))
        shown = ranked[: self.max_history]
        latest = max(history, key=lambda t: t.iteration) if history else None
        if latest is not None and latest not in shown:
            shown.append(latest)
        return shown

    def prompt(self, history: list[Trial], current: Organization, approved: bool = False
               ) -> list[dict[str, str]]:
        """The chat messages (system + user, from ``coordinator.j2``)."""
        from orgteams.agents.llm.prompts import default_templates

        templates = self.templates or default_templates()
        entries = []
        for t in self.shown_history(history):
            org = t.organization.model_dump(mode="json", by_alias=True, exclude_none=True,
                                            include={"name", *EDITABLE_FIELDS})
            entries.append({
                "iteration": t.iteration, "cost": round(t.cost, 3),
                "metrics": json.dumps(t.metrics, default=str),
                "organization": yaml.dump(org, Dumper=_BlockDumper, sort_keys=False,
                                          allow_unicode=True, width=100),
                "critique": (_capped(json.dumps(t.critique.for_prompt(), ensure_ascii=False),
                                     CRITIQUE_MAX_CHARS)
                             if t.critique is not None and t.critique.fallback is None
                             else None)})
        gov = current.governance
        variables = {
            "history": entries, "current": current.to_yaml(), "k": self.k,
            "protocols": list(PROTOCOLS), "leadership_rules": list(LEADERSHIP_RULES),
            "editable": [f for f in EDITABLE_FIELDS if f not in gov.human_only
                         and (approved or f not in gov.needs_approval)],
            "human_only": list(gov.human_only),
            "needs_approval": [] if approved else list(gov.needs_approval),
            "example": EXAMPLE,
        }
        return [{"role": "system", "content": templates.render("coordinator", part="system",
                                                                **variables)},
                {"role": "user", "content": templates.render("coordinator", part="user",
                                                              **variables)}]

    def propose(self, history: list[Trial], current: Organization, *, approved: bool = False,
                team: list[str] | None = None, iteration: int | None = None,
                screened: list[Organization] = ()) -> CoordinatorDecision:
        """Ask for candidates, validate them, pick one; never raises for bad replies.

        Args:
            history: Every played organization so far (any order; sorted here).
            current: The organization proposals edit and the fallback keeps.
            approved: A human approved changes to ``needs_approval`` fields.
            team: Agent ids; when given, candidates must resolve for this team.
            iteration: Used to name unnamed candidates (``<base>_r<iteration>_<i>``).
            screened: Candidates the loop played before without keeping them in the
                history: tried, like the history's organizations.
        """
        self.calls += 1
        seen: list[dict[str, Any]] = []
        attempt = [0]
        stem = re.sub(r"_r\d+_\d+$", "", current.name)
        tag = f"r{iteration}" if iteration is not None else "r"

        def check(reply: CoordinatorReply) -> CoordinatorDecision:
            attempt[0] += 1
            built: list[Organization | None] = []
            tried = tried_behaviours(history, screened, team, self.reads_prompts)
            for i, proposal in enumerate(reply.candidates):
                row: dict[str, Any] = {"attempt": attempt[0], "index": i,
                                       "name": proposal.name, "rationale": proposal.rationale,
                                       "changes": proposal.changes() | (
                                           {"leader": proposal.leader} if proposal.leader
                                           else {})}
                if i >= self.k:
                    row.update(valid=False, reason=f"ignored: more than k={self.k} candidates")
                    built.append(None)
                else:
                    name = _slug(proposal.name) or f"{stem}_{tag}_{i}"
                    org, reason = build_candidate(current, proposal, name=name,
                                                  approved=approved, team=team)
                    if org is not None and not set(current.diff(org)) - {"name",
                                                                         "description"}:
                        org, reason = None, ("invalid: plays exactly like the current "
                                             "organization (set at least one field to a new "
                                             "value)")
                    elif org is not None:
                        skipped = already_tried(org, tried, team, self.reads_prompts)
                        if skipped:
                            org, reason = None, skipped
                    row.update(valid=org is not None, reason=reason)
                    built.append(org)
                seen.append(row)
            valid = [i for i, org in enumerate(built) if org is not None]
            if not valid:
                reasons = "; ".join(f"candidate {r['index']}: {r['reason']}" for r in seen
                                    if r["attempt"] == attempt[0])
                raise ReplyError(f"no candidate is valid ({reasons})")
            if reply.pick in valid:
                pick, why = reply.pick, "model pick"
            else:
                pick, why = valid[0], f"first valid (model pick {reply.pick} invalid)"
            return CoordinatorDecision(organization=built[pick], pick=pick,  # type: ignore[arg-type]
                                       pick_reason=why, analysis=reply.analysis,
                                       options=[o for o in built if o is not None])

        from orgteams.agents.llm.prompts import default_templates

        templates = self.templates or default_templates()
        hint = (f"give 1 to {self.k} candidates that change only editable fields "
                f"({', '.join(EDITABLE_FIELDS)}), never human-only ones, and pick one "
                "by its index")
        validate = pydantic_parser(CoordinatorReply, check)
        read_as: list[str | None] = [None]

        def parse(parsed: Any) -> CoordinatorDecision:
            reply, read_as[0] = single_candidate(parsed)
            try:
                return validate(reply)
            except ReplyError as exc:  # name the fields as the model wrote them
                if read_as[0] is None:
                    raise
                raise ReplyError(str(exc).replace("field 'candidates.0.", "field '")) from None

        decision, call = structured_call(
            self.backend, self.prompt(history, current, approved),
            schema=CoordinatorReply.model_json_schema(), parse=parse,
            correction=lambda error: templates.render("correction", error=error,
                                                      example=EXAMPLE, hint=hint),
            max_retries=self.max_retries, max_tokens=self.max_tokens)
        if decision is not None and read_as[0]:  # the accepted reply is the last one read
            call.repaired.append(read_as[0])
        if decision is None:
            reason = call.fallback or "no decision"
            decision = CoordinatorDecision(organization=current, pick_reason=f"fallback: {reason}",
                                           fallback=reason)
        decision.candidates = seen
        decision.call = call.to_dict()
        return decision
