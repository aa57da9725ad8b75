"""Keyboard play beside high-level teammates: the glue between ``envs.play`` and agents.

:mod:`orgteams.envs.play` knows only the :class:`~orgteams.envs.play.Teammates`
protocol (envs never import agents); this module supplies planner teammates and
the ``orgteams play --others random|planner`` entry point::

    from orgteams.play_team import play_with
    play_with("planner", layout="studio", num_agents=3)   # you are agent_0

Planners talk among themselves as in :func:`orgteams.agents.planner.run_team`
(claims, found, done); the person says nothing and is not told what they say.
"""

from __future__ import annotations

from typing import Any

from orgteams.agents.messages import Message
from orgteams.agents.planner import PlannerAgent
from orgteams.envs._util import unknown_name
from orgteams.envs.highlevel import HighLevelEnv
from orgteams.envs.play import play

OTHERS = ("random", "planner")


class PlannerTeammates:
    """:class:`~orgteams.envs.play.Teammates` made of :class:`PlannerAgent` s.

    One planner per teammate, created when first asked; every tick (a decision round)
    each one speaks (everyone hears everyone) and then acts.
    """

    def __init__(self) -> None:
        self.planners: dict[str, PlannerAgent] = {}
        self._inbox: dict[str, list[Message]] = {}

    def reset(self) -> None:
        """Forget the episode: new planners next time."""
        self.planners.clear()
        self._inbox.clear()

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        for a in agents:
            if a not in self.planners:
                self.planners[a], self._inbox[a] = PlannerAgent(a), []
        for a in agents:
            said = self.planners[a].communicate(env, self._inbox[a])
            self._inbox[a] = []
            for m in said:
                for other in agents:
                    if other != a and m.addressed_to(other):
                        self._inbox[other].append(m)
        return {a: self.planners[a].act(env) for a in agents}


def play_with(others: str = "random", **play_kwargs: Any) -> dict[str, Any]:
    """:func:`orgteams.envs.play.play` with ``others`` ``"random"`` or ``"planner"``.

    LLM teammates are not offered here yet: they decide in the team runner's
    communicate/act rounds (see ``orgteams run --backend human,...``).
    """
    if others not in OTHERS:
        raise unknown_name("others", others, OTHERS)
    if others == "planner":
        return play(teammates=PlannerTeammates(), **play_kwargs)
    return play(others="random", **play_kwargs)


__all__ = ["OTHERS", "PlannerTeammates", "play_with"]
