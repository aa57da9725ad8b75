"""The Critic: one structured LLM call that assesses an episode (DESIGN.md, "Criticize-Reflect").

It reads the organization, the episode's cost and a bounded summary
(:func:`~orgteams.criticize_reflect.summary.summarize_episode`), and returns a
:class:`Critique`: per-agent assessment, problems, suggestions and a leadership ranking
on four qualities (communication, conflict resolution, flexibility, strategy; agent
ids, best first). An invalid reply gets a correction and a bounded retry; after that
(or a backend failure) the Critic returns an empty critique with ``fallback`` set, so
the loop goes on and the fallback is on record.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orgteams.agents.backends.base import ChatBackend
from orgteams.agents.llm.schemas import ReplyError
from orgteams.agents.llm.structured import pydantic_parser, structured_call
from orgteams.agents.records import StepRecord
from orgteams.organizations.spec.organization import Organization

__all__ = ["QUALITIES", "AgentAssessment", "Critic", "Critique", "CritiqueReply",
           "LeadershipRanking"]

QUALITIES = ("communication", "conflict_resolution", "flexibility", "strategy")
"""The leadership qualities the Critic ranks agents on (organized-teams paper, B.1)."""


class AgentAssessment(BaseModel):
    """What one agent did well or badly."""

    model_config = ConfigDict(extra="forbid")
    agent: str = Field(max_length=40, description="agent id, e.g. agent_0")
    assessment: str = Field(max_length=400)


class LeadershipRanking(BaseModel):
    """Agent ids best first, per leadership quality (an agent may be left out)."""

    model_config = ConfigDict(extra="forbid")
    communication: list[str] = Field(default_factory=list)
    conflict_resolution: list[str] = Field(default_factory=list)
    flexibility: list[str] = Field(default_factory=list)
    strategy: list[str] = Field(default_factory=list)


class CritiqueReply(BaseModel):
    """The JSON object the Critic model must answer (its schema is sent to the backend)."""

    model_config = ConfigDict(extra="forbid")
    summary: str = Field(default="", max_length=600, description="what happened, briefly")
    agents: list[AgentAssessment] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, max_length=10)
    suggestions: list[str] = Field(default_factory=list, max_length=10)
    leadership_ranking: LeadershipRanking = Field(default_factory=LeadershipRanking)


class Critique(CritiqueReply):
    """A validated critique plus how it was obtained.

    Attributes:
        fallback: None for a model's critique; else why this is an empty fallback.
        call: The call's :class:`~orgteams.agents.records.StepRecord` as a dict.
        codes: Problem codes of the heuristic Critic (:data:`~orgteams.criticize_reflect.
            heuristic.PROBLEMS`), empty for a model's critique.
    """

    fallback: str | None = None
    call: dict[str, Any] = Field(default_factory=dict)
    codes: list[str] = Field(default_factory=list)

    @classmethod
    def empty(cls, reason: str, call: StepRecord | None = None) -> Critique:
        """The declared fallback: no assessment, ``fallback`` = ``reason``."""
        return cls(fallback=reason, call=call.to_dict() if call else {})

    def for_prompt(self) -> dict[str, Any]:
        """The model-facing fields only (what the Coordinator reads)."""
        return self.model_dump(include=set(CritiqueReply.model_fields))


EXAMPLE = {
    "summary": "The leader assigned rooms well but members repeated what they had seen.",
    "agents": [{"agent": "agent_0", "assessment": "clear orders, no redundant messages"}],
    "problems": ["members broadcast every sighting to everyone"],
    "suggestions": ["members report only to the leader"],
    "leadership_ranking": {"communication": ["agent_0"], "conflict_resolution": ["agent_0"],
                           "flexibility": ["agent_0"], "strategy": ["agent_0"]},
}


def _canonical(name: str, team: dict[str, str]) -> str | None:
    key = name.strip().casefold()
    for agent, label in team.items():
        if key in (agent.casefold(), label.casefold()):
            return agent
    return None


class Critic:
    """Assesses an episode with one structured LLM call.

    Args:
        backend: The chat model.
        max_retries: Extra attempts after an invalid reply (each after a correction).
        max_tokens: Completion budget per attempt.
        templates: Prompt templates (default: the shipped ``assets/prompts``).
    """

    def __init__(self, backend: ChatBackend, *, max_retries: int = 1, max_tokens: int = 1024,
                 templates: Any = None) -> None:
        self.backend = backend
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.templates = templates
        self.calls = 0

    def _templates(self) -> Any:
        from orgteams.agents.llm.prompts import default_templates

        return self.templates or default_templates()

    def prompt(self, organization: Organization, summary: dict[str, Any], cost: float
               ) -> list[dict[str, str]]:
        """The chat messages for one critique (system + user, from ``critic.j2``)."""
        templates = self._templates()
        variables = {"organization": organization.to_yaml(), "cost": round(cost, 3),
                     "summary": json.dumps(summary, ensure_ascii=False, default=str),
                     "qualities": list(QUALITIES), "example": EXAMPLE}
        return [{"role": "system", "content": templates.render("critic", part="system",
                                                                **variables)},
                {"role": "user", "content": templates.render("critic", part="user",
                                                              **variables)}]

    def criticize(self, organization: Organization, summary: dict[str, Any], cost: float,
                  team: dict[str, str] | None = None) -> Critique:
        """Critique one episode; never raises for a bad reply or a failed backend.

        Args:
            organization: The organization the team played under.
            summary: The bounded episode summary.
            cost: The episode's cost (see :func:`~orgteams.criticize_reflect.loop.episode_cost`).
            team: Agent id -> display name; names in the reply must be of this team
                (default: the agents of ``summary["agents"]``; none known: not checked).
        """
        self.calls += 1
        if team is None:
            team = {a: a for a in summary.get("agents", {})}

        def check(reply: CritiqueReply) -> Critique:
            if team:
                unknown: list[str] = []
                for a in reply.agents:
                    a.agent = _canonical(a.agent, team) or (unknown.append(a.agent) or a.agent)
                ranking = reply.leadership_ranking
                for quality in QUALITIES:
                    ids = []
                    for name in getattr(ranking, quality):
                        agent = _canonical(name, team)
                        unknown += [] if agent else [name]
                        ids.append(agent)
                    setattr(ranking, quality, list(dict.fromkeys(ids)))
                if unknown:
                    raise ReplyError(f"unknown agents {sorted(set(unknown))!r}; use ids from "
                                       f"{', '.join(team)}")
            return Critique(**reply.model_dump())

        templates = self._templates()
        hint = "agent names must be ids like agent_0; every list holds strings"
        critique, call = structured_call(
            self.backend, self.prompt(organization, summary, cost),
            schema=CritiqueReply.model_json_schema(), parse=pydantic_parser(CritiqueReply, check),
            correction=lambda error: templates.render("correction", error=error,
                                                      example=EXAMPLE, hint=hint),
            max_retries=self.max_retries, max_tokens=self.max_tokens)
        if critique is None:
            return Critique.empty(call.fallback or "no critique", call)
        critique.call = call.to_dict()
        return critique
