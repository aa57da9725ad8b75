"""Keyboard play beside high-level teammates: the glue between ``envs.play`` and agents.

:mod:`orgteams.envs.play` knows only the :class:`~orgteams.envs.play.Teammates`
protocol (envs never import agents); this module supplies planner and LLM
teammates and the ``orgteams play --others ...`` entry point::

    from orgteams.play_team import play_with
    play_with("planner", layout="studio", num_agents=3)   # you are agent_0
    play_with("local", layout="studio", num_agents=2)     # beside the embedded model

Planners talk among themselves as in :func:`orgteams.organizations.planner_team.run_team`
(claims, found, done); the person says nothing and is not told what they say.
LLM teammates (any member spec: ``local``, ``openai:<model>``, ``scripted``) talk
among themselves and then choose their next high-level action whenever their plan
ends, as in the team runner's rounds; the person hears them (speech bubbles) but
does not answer: to lead an LLM team in words, use
``orgteams run --backend human,local,local --render human``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from orgteams.agents.planner import PlannerAgent
from orgteams.envs._util import unknown_name
from orgteams.envs.highlevel import HighLevelEnv
from orgteams.envs.messages import TeamMessage
from orgteams.envs.play import play
from orgteams.envs.team import Team
from orgteams.organizations.episode import EpisodeState
from orgteams.organizations.phases import communicate_phase, decide_actions
from orgteams.organizations.planner_team import EVERYONE_HEARS_EVERYONE, TurnTaker
from orgteams.organizations.spec import Organization, Topology

OTHERS = ("random", "planner")  # plus any LLM member spec: local, openai:<model>, scripted
LLM_KINDS = ("local", "openai", "scripted")


# Teammates in play have no organization: no instruction and no roles; they speak at once.
UNORGANIZED = Organization(name="play", description="orgteams play: teammates, no organization",
                           protocol="shared", topology=Topology(member_role=""),
                           rules={"in_prompt": False})  # nothing agreed, nothing told


class PlannerTeammates:
    """:class:`~orgteams.envs.play.Teammates` made of :class:`PlannerAgent` s.

    One planner per teammate, created when first asked; every tick (a decision round)
    each one speaks (everyone hears everyone; the player sees speech bubbles, as in
    ``orgteams run``) and then acts, on the round loop's phases as in
    :func:`~orgteams.organizations.planner_team.run_team`. :attr:`messages` counts
    what they said.
    """

    def __init__(self) -> None:
        self.planners: dict[str, PlannerAgent] = {}
        self._state: EpisodeState | None = None
        self.messages = 0

    def reset(self) -> None:
        """Forget the episode: new planners next time."""
        self.planners.clear()
        self._state = None

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        state = self._state
        if state is None or state.env is not env or list(state.team) != list(agents):
            for a in agents:
                self.planners.setdefault(a, PlannerAgent(a))
            members = {a: TurnTaker(self.planners[a]) for a in agents}
            if state is not None:  # same planners, same pending messages
                members.update({a: m for a, m in state.members.items() if a in members})
            state = self._state = EpisodeState(env, EVERYONE_HEARS_EVERYONE,
                                               EVERYONE_HEARS_EVERYONE.resolve(list(agents)),
                                               members)
            state.hooks.message.append(self._said)

        async def decide() -> dict[str, str]:
            await communicate_phase(state)
            return (await decide_actions(state))[0]

        actions = asyncio.run(decide())
        state.round += 1
        return actions

    def _said(self, message: TeamMessage) -> None:
        """A bubble for the player (decisions run on this thread, which owns the window)."""
        self._state.env.base.overlay.say(message)
        self.messages += 1


class MemberTeammates:
    """:class:`~orgteams.envs.play.Teammates` built from one member spec (LLM agents).

    Each tick, the teammates whose plan has ended decide together (concurrently), on
    the round loop's phases: with ``talk``, first one communicate stage among them
    (each may message anyone, the player included; what they say appears as speech
    bubbles), then the act phase; the others keep their plans. An id that is not
    available becomes the safe action (counted in :attr:`fallbacks`). The decisions
    run on a background event loop; meanwhile :attr:`waiting`, which the play session
    sets, keeps the window drawn and responsive (a local model takes seconds per
    decision on a CPU; talking doubles that).
    """

    def __init__(self, spec: str, *, seed: int | None = 0, cache: str | None = None,
                 talk: bool = True):
        kind = spec.split(":", 1)[0]
        if kind not in LLM_KINDS:
            raise unknown_name("LLM teammate kind", kind, LLM_KINDS)
        self.spec, self.seed, self.cache, self.talk = spec, seed, cache, talk
        self.members: dict[str, Any] = {}
        from orgteams.team import BackendPool

        self.pool = BackendPool()  # owns the members' backends; closed by close()
        self.round = 0
        self.decisions = 0
        self.fallbacks = 0
        self.messages = 0
        self.waiting: Callable[[], None] | None = None
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True,
                         name="orgteams-teammates").start()

    def reset(self) -> None:
        """A new episode: the same members, their memories cleared."""
        for member in self.members.values():
            member.reset()
        self.round = 0

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        from orgteams import team as team_module  # looked up per call: tests replace it

        for a in agents:
            if a not in self.members:
                self.members[a] = team_module.build_member(a, self.spec, seed=self.seed,
                                                    cache=self.cache, pool=self.pool)
        deciders = [a for a in agents if env.needs_decision(a)]
        self.round += 1
        if not deciders:
            return {}
        ids = list(env.possible_agents)
        team = Team.of(ids, list(env.base.display_names or ids))
        state = EpisodeState(env, UNORGANIZED, UNORGANIZED.resolve(team),
                             {a: self.members[a] for a in agents}, round=self.round,
                             tokenizer=self.pool.tokenizer)
        spoken: list[TeamMessage] = []
        state.hooks.message.append(spoken.append)

        async def decide() -> tuple[dict[str, str], dict[str, Any]]:
            if self.talk:
                await communicate_phase(state, speakers=deciders)
            return await decide_actions(state, deciders=deciders)

        future = asyncio.run_coroutine_threadsafe(decide(), self._loop)
        while not future.done():
            if self.waiting is not None:
                self.waiting()
            else:
                time.sleep(0.01)
        actions, decisions = future.result()
        for message in spoken:  # drawn here: the main thread owns the window
            env.base.overlay.say(message)
        self.messages += len(spoken)
        self.fallbacks += sum(actions[a] != decisions[a].action_id for a in deciders)
        self.decisions += len(deciders)
        return actions

    def close(self) -> None:
        """Stop the background loop and close the members' backends (a local server stops)."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.pool.close()


def play_with(others: str = "random", *, cache: str | None = None, talk: bool = True,
              **play_kwargs: Any) -> dict[str, Any]:
    """:func:`orgteams.envs.play.play` beside ``others``: ``"random"`` (primitive
    actions), ``"planner"``, or an LLM member spec (``local``, ``openai:<model>``,
    ``scripted``; ``cache`` is their response cache, ``talk`` False keeps them silent)."""
    if others == "random":
        return play(others="random", **play_kwargs)
    if others == "planner":
        planners = PlannerTeammates()
        return {**play(teammates=planners, **play_kwargs),
                "teammate_messages": planners.messages}
    if others.split(":", 1)[0] not in LLM_KINDS:
        raise unknown_name("others", others, OTHERS + LLM_KINDS)
    teammates = MemberTeammates(others, seed=play_kwargs.get("seed", 0), cache=cache,
                                talk=talk)
    try:
        summary = play(teammates=teammates, **play_kwargs)
    finally:
        teammates.close()
    return {**summary, "teammate_decisions": teammates.decisions,
            "teammate_fallbacks": teammates.fallbacks, "teammate_messages": teammates.messages}


__all__ = ["LLM_KINDS", "OTHERS", "MemberTeammates", "PlannerTeammates", "play_with"]
