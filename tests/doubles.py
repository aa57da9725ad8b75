"""Test doubles shared by the test modules: stand-ins for the env, contexts and members.

:class:`FakeEnv` is a tiny stand-in for the ``MemberView`` members read, with fixed text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from orgteams.agents import CommunicateContext

TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}


@dataclass(frozen=True)
class FakeAction:
    id: str
    kind: str
    target: str
    label: str


ACTIONS = [
    FakeAction("explore:kitchen", "explore", "kitchen", "[goexplore] <kitchen>"),
    FakeAction("check:fridge", "check", "fridge", "[gocheck] <fridge>"),
    FakeAction("grab:cupcake_1", "grab", "cupcake_1", "[gograb] <cupcake_1>"),
    FakeAction("wait", "wait", "", "[wait]"),
]


class FakeMemory:
    def render_text(self) -> str:
        return "Rooms seen: kitchen.\ncupcake_1: on kitchen_table."


class FakeEnv:
    """Satisfies the part of the MemberView contract that agents read."""

    def __init__(self, actions: list[FakeAction] | None = None) -> None:
        self.actions = list(ACTIONS if actions is None else actions)

    def describe(self, agent: str) -> str:
        return f"You are {agent}, in the kitchen. You hold: nothing."

    def describe_goal(self) -> str:
        return "ON(cupcake, coffee_table): 2 (1 done)"

    def progress(self) -> dict:
        return {"satisfied": [], "remaining": ["ON(cupcake, coffee_table): 2"],
                "units_done": 1, "units_total": 2}

    def memory(self, agent: str) -> FakeMemory:
        return FakeMemory()

    def available_actions(self, agent: str) -> list[FakeAction]:
        return list(self.actions)

    def needs_decision(self, agent: str) -> bool:
        return True


def comm_ctx(**changes) -> CommunicateContext:
    base = dict(round=3, agent="agent_0", name="Alice", team=dict(TEAM),
                instruction="Alice is the leader. Follow her orders.",
                can_message=["agent_1", "agent_2"])
    return CommunicateContext(**{**base, **changes})


def run(coro):
    return asyncio.run(coro)
