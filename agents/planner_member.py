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

from orgteams.agents.agent_base import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    OutgoingMessage,
    ReceivedMessage,
)
from orgteams.agents.messages import EVERYONE, Message
from orgteams.agents.planner import PlannerAgent


def _to_message(m: ReceivedMessage | dict) -> Message | None:
    """A structured message back from what the runner delivers (None for free text)."""
    get = m.get if isinstance(m, dict) else lambda k, d=None: getattr(m, k, d)
    kind = get("kind") or "text"
    if kind == "text" or not get("content"):
        return None
    receivers = get("receivers")
    receivers = EVERYONE if receivers in (None, EVERYONE) else tuple(receivers)
    try:
        return Message(get("sender"), receivers, kind, dict(get("content")))
    except ValueError:
        return None


class PlannerMember:
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

    def observe(self, env) -> None:  # the planner reads env memory directly
        pass

    def _fresh(self, messages: list[Message]) -> list[Message]:
        out = []
        for m in messages:
            if not self.claims and m.kind in ("claim", "release"):
                continue
            key = (m.sender, m.kind, tuple(sorted(m.content.items())))
            if key not in self._seen:
                self._seen.add(key)
                out.append(m)
        return out

    def receive(self, messages: list[ReceivedMessage]) -> None:
        self.planner.receive(self._fresh([x for m in messages if (x := _to_message(m))]))

    async def communicate(self, ctx: CommunicateContext, env) -> CommunicateDecision:
        start = time.perf_counter()
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        if ctx.stage_kind == "vote":
            vote = min(ctx.candidates or [self.agent_id], key=lambda a: int(a.rpartition("_")[2]))
            record.parsed = {"vote": vote}
            record.wall = time.perf_counter() - start
            return CommunicateDecision([], None, False, vote, "", record)
        inbox = self._fresh([x for m in ctx.visible_this_round if (x := _to_message(m))])
        said = [m for m in self.planner.communicate(env, inbox)
                if self.claims or m.kind not in ("claim", "release")]
        out = [OutgoingMessage(m.receivers, m.render(ctx.team), m.kind, dict(m.content))
               for m in said]
        record.parsed = {"messages": [m.to_dict() for m in said]}
        record.wall = time.perf_counter() - start
        return CommunicateDecision(out, ctx.role, False, None, "", record)

    async def act(self, env, round: int, ctx: ActContext | None = None) -> ActDecision:
        start = time.perf_counter()
        action = self.planner.act(env)
        record = DecisionRecord("act", self.agent_id, round, parsed={"action": action},
                                model=self.model)
        record.wall = time.perf_counter() - start
        return ActDecision(action, "", record)


class RandomMember:
    """A :class:`RandomAgent` on a team: silent, uniformly random high-level actions."""

    model = "random"
    acts_every_round = False

    def __init__(self, agent_id: str, seed: int | None = None):
        from orgteams.agents.random_agent import RandomAgent

        self.agent_id = agent_id
        self.agent = RandomAgent(agent_id, seed)

    def reset(self) -> None:
        pass

    def observe(self, env) -> None:
        pass

    def receive(self, messages: list[ReceivedMessage]) -> None:
        pass

    async def communicate(self, ctx: CommunicateContext, env) -> CommunicateDecision:
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        vote = (ctx.candidates or [None])[0] if ctx.stage_kind == "vote" else None
        return CommunicateDecision([], None, False, vote, "", record)

    async def act(self, env, round: int, ctx: ActContext | None = None) -> ActDecision:
        action = self.agent.act(env)
        record = DecisionRecord("act", self.agent_id, round, parsed={"action": action},
                                model=self.model)
        return ActDecision(action, "", record)
