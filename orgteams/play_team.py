"""Keyboard play beside high-level teammates: the glue between ``envs.play`` and agents.

:mod:`orgteams.envs.play` knows only the :class:`~orgteams.envs.play.Teammates`
protocol (envs never import agents); this module supplies planner and LLM
teammates and the ``orgteams play --others ...`` entry point::

    from orgteams.play_team import play_with
    play_with("planner", layout="studio", num_agents=3)   # you are agent_0
    play_with("local", layout="studio", num_agents=2)     # beside the embedded model

Planners talk among themselves as in :func:`orgteams.agents.planner.run_team`
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

from orgteams.agents import ActContext, CommunicateContext, ReceivedMessage
from orgteams.agents.messages import Message
from orgteams.agents.planner import PlannerAgent
from orgteams.envs._util import unknown_name
from orgteams.envs.highlevel import HighLevelEnv
from orgteams.envs.overlay import SpokenMessage
from orgteams.envs.play import play

OTHERS = ("random", "planner")  # plus any LLM member spec: local, openai:<model>, scripted
LLM_KINDS = ("local", "openai", "scripted")


class PlannerTeammates:
    """:class:`~orgteams.envs.play.Teammates` made of :class:`PlannerAgent` s.

    One planner per teammate, created when first asked; every tick (a decision round)
    each one speaks (everyone hears everyone; the player sees speech bubbles, as in
    ``orgteams run``) and then acts.
    """

    def __init__(self) -> None:
        self.planners: dict[str, PlannerAgent] = {}
        self._inbox: dict[str, list[Message]] = {}
        self.round = 0
        self.messages = 0

    def reset(self) -> None:
        """Forget the episode: new planners next time."""
        self.planners.clear()
        self._inbox.clear()
        self.round = 0

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        for a in agents:
            if a not in self.planners:
                self.planners[a], self._inbox[a] = PlannerAgent(a), []
        self.round += 1
        team = list(env.possible_agents)
        for a in agents:
            said = self.planners[a].communicate(env, self._inbox[a])
            self._inbox[a] = []
            for m in said:
                for other in agents:
                    if other != a and m.addressed_to(other):
                        self._inbox[other].append(m)
                heard = tuple(b for b in team if b != a and m.addressed_to(b))
                env.base.overlay.say(SpokenMessage(a, heard, m.text or m.render(), self.round))
                self.messages += 1
        return {a: self.planners[a].act(env) for a in agents}


class MemberTeammates:
    """:class:`~orgteams.envs.play.Teammates` built from one member spec (LLM agents).

    Each tick, the teammates whose plan has ended decide together (concurrently): with
    ``talk``, first one communicate stage among them (each may message anyone, the
    player included; what they say appears as speech bubbles), then the act phase as
    in the team runner; the others keep their plans. An id that is not available
    becomes ``continue`` or ``wait`` (counted in :attr:`fallbacks`). The decisions run
    on a background event loop; meanwhile :attr:`waiting`, which the play session
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
        from orgteams.team import build_member

        for a in agents:
            if a not in self.members:
                self.members[a] = build_member(a, self.spec, seed=self.seed, cache=self.cache)
        deciders = [a for a in agents if env.needs_decision(a)]
        self.round += 1
        if not deciders:
            return {}
        names = dict(zip(env.possible_agents,
                         env.base.display_names or env.possible_agents))
        contexts = {a: ActContext(self.round, a, names[a], names) for a in deciders}

        async def decide() -> tuple[list[SpokenMessage], list[Any]]:
            spoken = await self._talk(env, deciders, names) if self.talk else []
            return spoken, await asyncio.gather(
                *(self.members[a].act(env, self.round, contexts[a]) for a in deciders))

        future = asyncio.run_coroutine_threadsafe(decide(), self._loop)
        while not future.done():
            if self.waiting is not None:
                self.waiting()
            else:
                time.sleep(0.01)
        spoken, decisions = future.result()
        for message in spoken:  # drawn here: the main thread owns the window
            env.base.overlay.say(message)
        self.messages += len(spoken)
        actions = {}
        for agent, decision in zip(deciders, decisions):
            valid = {x.id for x in env.available_actions(agent)}
            action = decision.action_id
            if action not in valid:
                self.fallbacks += 1
                action = "continue" if "continue" in valid else "wait"
            actions[agent] = action
        self.decisions += len(deciders)
        return actions

    async def _talk(self, env: HighLevelEnv, deciders: list[str], names: dict[str, str]
                    ) -> list[SpokenMessage]:
        """One communicate stage of the deciders; delivers to teammates, returns all said."""
        team = list(env.possible_agents)
        contexts = {a: CommunicateContext(self.round, a, names[a], names,
                                          can_message=[b for b in team if b != a])
                    for a in deciders}
        said = await asyncio.gather(*(self.members[a].communicate(contexts[a], env)
                                      for a in deciders))
        spoken: list[SpokenMessage] = []
        inbox: dict[str, list[ReceivedMessage]] = {}
        for sender, decision in zip(deciders, said):
            for m in decision.messages:
                to = [b for b in team if b != sender and (m.receivers == "everyone"
                                                          or b in m.receivers)]
                spoken.append(SpokenMessage(sender, tuple(to), m.text, self.round))
                for b in to:
                    if b in self.members:
                        inbox.setdefault(b, []).append(ReceivedMessage(
                            sender, m.receivers, m.text, self.round, m.kind, dict(m.content)))
        for b, messages in inbox.items():
            self.members[b].receive(messages)
        return spoken

    def close(self) -> None:
        """Stop the background loop (the members' servers stop with the process)."""
        self._loop.call_soon_threadsafe(self._loop.stop)


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
