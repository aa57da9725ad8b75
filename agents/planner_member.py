"""Planner and random agents as team members, so teams can mix them with LLM agents.

:class:`PlannerMember` adapts :class:`~orgteams.agents.planner.PlannerAgent` to the
:class:`~orgteams.agents.agent_base.TeamMember` interface the team runner drives.
Its structured messages (claims, found, assign, done) travel through the runner like
any other message, along the organization's channels, so an organization changes
what planners know and therefore what they do: a planner leader assigns subgoals,
members follow assignments, and under ``shared`` nobody hears this round's claims.
"""

from __future__ import annotations

import time
from dataclasses import replace

from orgteams.agents.agent_base import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    MemberBase,
    TeamMessage,
)
from orgteams.agents.planner import PlannerAgent
from orgteams.agents.shared_context import as_claims
from orgteams.envs.messages import render


def _structured(messages: list[TeamMessage]) -> list[TeamMessage]:
    """The structured messages a planner understands (free text is ignored)."""
    return [m for m in messages if m.kind not in ("text", "action") and m.content]


def _parsed(m: TeamMessage) -> dict:
    """A planner's message as its decision record shows it."""
    return {"sender": m.sender, "receivers": m.receivers_json(), "kind": m.kind,
            "content": dict(m.content), "text": m.text}


def _known_choices(ctx: CommunicateContext) -> list[TeamMessage]:
    """What the protocol shows of others' actions, as claims: earlier agents' chosen
    actions this round (``sequential``) and the latest round of the shared history
    (``shared``)."""
    chosen = {m.sender: m.content["action"] for m in ctx.visible_this_round
              if m.kind == "action"}
    out = as_claims(chosen, ctx.agent, tick=-1)  # decided before this agent, this round
    if ctx.history is not None and ctx.history.rounds:
        last = ctx.history.rounds[-1]
        out += as_claims(last.actions, ctx.agent, tick=last.tick)
    return out


def _forget(planner: PlannerAgent, removed: tuple[str, ...]) -> None:
    """Claims and assignments of agents taken out of the team lapse (shocks)."""
    gone = set(removed)
    for obj in [o for o, (who, _) in planner.claims.items() if who in gone]:
        del planner.claims[obj]
    for agent in gone & set(planner.room_claims):
        del planner.room_claims[agent]
    for key in [k for k, who in planner.assigned.items() if who in gone]:
        del planner.assigned[key]


class PlannerMember(MemberBase):
    """A :class:`PlannerAgent` on a team. ``leader=True`` makes it assign subgoals.

    ``claims=False`` models a team with no agreed way of working (the ``none``
    organization): planners still share what they find, but neither announce nor
    respect claims, so two of them may chase the same object.
    """

    model = "planner"
    acts_every_round = True  # it may drop a plan whose object a teammate claimed first

    def __init__(self, agent_id: str, leader: bool = False, claims: bool = True):
        self.agent_id, self.claims = agent_id, claims
        self.planner = PlannerAgent(agent_id, role="leader" if leader else "member")
        self._seen: set[tuple] = set()

    def reset(self) -> None:
        self.planner = PlannerAgent(self.agent_id, role=self.planner.role)
        self._seen.clear()

    def set_leader(self, leader: bool) -> None:
        """Called by the runner when leadership changes (elections, dynamic rules)."""
        self.planner.role = "leader" if leader else "member"

    def _fresh(self, messages: list[TeamMessage]) -> list[TeamMessage]:
        out = []
        for m in messages:
            if not self.claims and m.kind in ("claim", "release"):
                continue
            key = (m.sender, m.kind, tuple(sorted(m.content.items())))
            if key not in self._seen:
                self._seen.add(key)
                out.append(m)
        return out

    def receive(self, messages: list[TeamMessage]) -> None:
        self.planner.receive(self._fresh(_structured(messages)))

    async def communicate(self, ctx: CommunicateContext, env) -> CommunicateDecision:
        start = time.perf_counter()
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        if ctx.stage_kind == "vote":
            vote = min(ctx.candidates or [self.agent_id], key=lambda a: int(a.rpartition("_")[2]))
            record.parsed = {"vote": vote}
            record.wall = time.perf_counter() - start
            return CommunicateDecision([], None, False, vote, "", record)
        if ctx.removed:
            _forget(self.planner, ctx.removed)
        inbox = self._fresh(_structured(ctx.visible_this_round) + _known_choices(ctx))
        heard = self.planner.communicate(env, inbox, ctx.can_message)
        said = [replace(m, round=ctx.round) for m in heard
                if self.claims or m.kind not in ("claim", "release")]
        record.parsed = {"messages": [_parsed(m) for m in said]}  # ids, as the planner said
        said = [replace(m, text=render(m.kind, m.content, m.text, ctx.team)) for m in said]
        record.wall = time.perf_counter() - start
        return CommunicateDecision(said, ctx.role, False, None, "", record)

    async def act(self, env, round: int, ctx: ActContext | None = None) -> ActDecision:
        start = time.perf_counter()
        action = self.planner.act(env)
        record = DecisionRecord("act", self.agent_id, round, parsed={"action": action},
                                model=self.model)
        record.wall = time.perf_counter() - start
        return ActDecision(action, "", record)


class RandomMember(MemberBase):
    """A :class:`RandomAgent` on a team: silent, uniformly random high-level actions."""

    model = "random"
    acts_every_round = False

    def __init__(self, agent_id: str, seed: int | None = None):
        from orgteams.agents.random_agent import RandomAgent

        self.agent_id = agent_id
        self.agent = RandomAgent(agent_id, seed)

    async def communicate(self, ctx: CommunicateContext, env) -> CommunicateDecision:
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        vote = (ctx.candidates or [None])[0] if ctx.stage_kind == "vote" else None
        return CommunicateDecision([], None, False, vote, "", record)

    async def act(self, env, round: int, ctx: ActContext | None = None) -> ActDecision:
        action = self.agent.act(env)
        record = DecisionRecord("act", self.agent_id, round, parsed={"action": action},
                                model=self.model)
        return ActDecision(action, "", record)
