"""Planner teams on the one round loop: :func:`run_team`, everyone hearing everyone.

:func:`run_team` plays :class:`~orgteams.agents.planner.planner.PlannerAgent` s (or any agent
with ``communicate(env, inbox)``, ``act(env)`` and ``agent_id``, such as
:class:`~orgteams.agents.random_agent.RandomAgent`) through
:func:`~orgteams.organizations.rounds.episode.play_rounds` under a plain organization
(protocol ``free``, all channels, no instruction): each round every agent speaks in
team order, hearing at once what earlier speakers said, then every agent acts. It is
the organization-free baseline of ``benchmarks/teams/planner_table.py`` and the source of
demonstrations (:mod:`orgteams.experiments.demos`). :func:`everyone_hears_everyone` keeps that
plain organization but takes another one's topology and rules (the planner table's
leader column: the named ``leader``'s, under which agent_0 assigns work).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    MemberBase,
    TeamMessage,
)
from orgteams.agents.team import Team
from orgteams.agents.view import MemberView
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.episode import EpisodeState, play_rounds
from orgteams.organizations.spec.organization import Organization

__all__ = ["TurnTaker", "everyone_hears_everyone", "run_team"]

EVERYONE_HEARS_EVERYONE = Organization(
    name="everyone_hears_everyone", description="run_team: speak in turn, all channels")


def everyone_hears_everyone(rules_of: Organization) -> Organization:
    """The plain organization of :func:`run_team` (protocol ``free``, all channels) with
    ``rules_of``'s topology and rules, so that who leads and who assigns work follow
    ``rules_of`` while everyone still hears everyone."""
    return Organization.model_validate({
        **EVERYONE_HEARS_EVERYONE.model_dump(),
        "name": f"everyone_hears_everyone__rules_of_{rules_of.name}",
        "topology": rules_of.topology.model_dump(), "rules": rules_of.rules.model_dump()})


class TurnTaker(MemberBase):
    """An agent that speaks with ``communicate(env, inbox)`` and acts with ``act(env)``,
    as a team member. At its turn it hears, once each and in the order said, the
    messages addressed to it since its last turn; its role stays the one it was given.
    An agent with a ``rules`` attribute (:class:`~orgteams.agents.planner.planner.PlannerAgent`)
    is given the organization's rules for it (``ctx.rules``) before each turn.
    """

    acts_every_round = True

    def __init__(self, agent: Any) -> None:
        self.agent, self.agent_id = agent, agent.agent_id
        self.model = type(agent).__name__
        self._pending: list[TeamMessage] = []
        self._shown: set[int] = set()

    def receive(self, messages: list[TeamMessage]) -> None:
        """Keep what it was not already shown this round, for its next turn."""
        self._pending += [m for m in messages if id(m) not in self._shown]

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        shown = [m for m in ctx.visible_this_round if not m.silent]
        self._shown = {id(m) for m in shown}
        inbox, self._pending = self._pending + shown, []
        if hasattr(self.agent, "rules"):
            self.agent.rules = ctx.rules  # e.g. whether a leader assigns work
        said = self.agent.communicate(env, inbox)
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        return CommunicateDecision(list(said), None, False, None, "", record)

    async def act(self, env: MemberView, round: int, ctx: ActContext | None = None
                  ) -> ActDecision:
        action = self.agent.act(env)
        return ActDecision(action, "", DecisionRecord("act", self.agent_id, round,
                                                      model=self.model))


def run_team(env: HighLevelEnv, agents: list, seed: int | None = None,
             max_rounds: int = 100_000, decisions: list | None = None,
             organization: Organization | None = None,
             messages: list | None = None,
             on_tick: Callable[..., None] | None = None) -> dict:
    """One episode: each round every agent speaks in order (everyone hears everyone,
    later speakers hear earlier ones at once), then every agent acts.

    When ``decisions`` is a list, ``(tick, round, agent, action_id)`` is appended for
    every action other than ``continue``; when ``messages`` is a list, every
    :class:`TeamMessage` said. ``organization``: played instead of the plain one
    (e.g. :func:`everyone_hears_everyone`); its rules reach agents with ``rules``.
    ``on_tick(before, joint_actions, after, infos)`` is called after every tick
    (a :attr:`~orgteams.organizations.rounds.episode.RoundHooks.tick` hook).

    Returns:
        ``ticks``, ``rounds``, ``success``, ``messages`` and ``message_words``.
    """
    env.reset(seed=seed)
    members = {a.agent_id: TurnTaker(a) for a in agents}
    team = Team.of([a.agent_id for a in agents])
    org = organization or EVERYONE_HEARS_EVERYONE
    state = EpisodeState(env, org, org.resolve(team), members)
    counts = {"messages": 0, "message_words": 0}

    def said(m: TeamMessage) -> None:
        counts["messages"] += 1
        counts["message_words"] += len(m.text.split())
        if messages is not None:
            messages.append(m)

    state.hooks.message.append(said)
    if on_tick is not None:
        state.hooks.tick.append(on_tick)
    if decisions is not None:
        state.hooks.actions.append(lambda s, actions: decisions.extend(
            (env.ticks, env.rounds, a, act) for a, act in actions.items() if act != "continue"))
    asyncio.run(play_rounds(state, max_rounds))
    return {"ticks": env.ticks, "rounds": env.rounds, "success": bool(env.world.success),
            **counts}
