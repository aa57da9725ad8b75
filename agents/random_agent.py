"""RandomAgent: picks uniformly among the high-level actions available to it."""

from __future__ import annotations

import numpy as np

from orgteams.agents.messages import TeamMessage
from orgteams.agents.view import MemberView


class RandomAgent:
    """A baseline that acts uniformly at random (seeded) and never speaks."""

    def __init__(self, agent_id: str, seed: int | None = None):
        self.agent_id = agent_id
        self.rng = np.random.default_rng(seed)

    def act(self, env: MemberView) -> str:
        """A uniformly drawn available action id (``continue`` while a plan runs)."""
        if not env.needs_decision(self.agent_id):
            return "continue"
        choices = [a.id for a in env.available_actions(self.agent_id) if a.id != "continue"]
        return choices[int(self.rng.integers(len(choices)))]

    def communicate(self, env: MemberView, inbox: list[TeamMessage]) -> list[TeamMessage]:
        return []

    def receive(self, messages: list[TeamMessage]) -> None:
        pass


__all__ = ["RandomAgent"]
