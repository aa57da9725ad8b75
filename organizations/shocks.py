"""Shocks: remove an agent or substitute its model at a given round, and recovery.

A removed agent stays in the env (it waits, idle) but takes no further part in the
team. Recovery is measured on goal units done per round: ``recovery_rounds`` is the
number of rounds after the shock until the team's average rate since the shock is
back at its rate over the ``window`` rounds before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orgteams.envs.errors import UserError

KINDS = ("remove", "substitute")


@dataclass(frozen=True)
class Shock:
    """``kind`` ``remove`` or ``substitute`` ``agent`` at the start of ``round``.

    For ``substitute``, ``member`` is a team member object or a spec string that the
    runner's ``member_factory(agent, spec)`` turns into one (e.g. ``"planner"``).
    """

    round: int
    kind: str
    agent: str
    member: Any = None

    def validate(self, team: list[str], factory) -> None:
        if self.kind not in KINDS:
            raise UserError(f"shock kind must be one of {KINDS}, got {self.kind!r}")
        if self.agent not in team:
            raise UserError(f"shock agent {self.agent!r} is not in the team {team}")
        if self.round < 0:
            raise UserError(f"shock round must be >= 0, got {self.round}")
        if self.kind == "substitute" and self.member is None:
            raise ValueError("a substitute shock needs member= (a member or a spec string)")
        if self.kind == "substitute" and isinstance(self.member, str) and factory is None:
            raise ValueError("a substitute shock given as a spec string needs the runner's "
                             "member_factory")

    def build(self, factory) -> Any:
        if isinstance(self.member, str):
            return factory(self.agent, self.member)
        return self.member

    def to_dict(self) -> dict:
        member = self.member if isinstance(self.member, str | None) else getattr(
            self.member, "model", type(self.member).__name__)
        return {"round": self.round, "kind": self.kind, "agent": self.agent, "member": member}

    @classmethod
    def parse(cls, text: str) -> Shock:
        """``"remove:agent_1@5"`` or ``"substitute:agent_1=planner@5"`` (CLI syntax)."""
        try:
            head, at = text.rsplit("@", 1)
            kind, rest = head.split(":", 1)
            agent, _, member = rest.partition("=")
            return cls(int(at), kind, agent, member or None)
        except ValueError:
            raise UserError(f"malformed shock {text!r}: expected 'remove:<agent>@<round>' or "
                            "'substitute:<agent>=<backend>@<round>'") from None


def recovery_rounds(units_by_round: list[int], shock_round: int, window: int = 5) -> int | None:
    """Rounds after ``shock_round`` until the progress rate is back to its pre-shock level.

    ``units_by_round[r]`` is the goal units done before round ``r`` (so index 0 is 0).
    Returns 0 when the team made no progress before the shock (nothing to recover),
    None when the episode ended before the rate came back.
    """
    s = min(shock_round, len(units_by_round) - 1)
    lo = max(0, s - window)
    if s == lo:
        return 0
    before = (units_by_round[s] - units_by_round[lo]) / (s - lo)
    if before <= 0:
        return 0
    for k in range(1, len(units_by_round) - s):
        if (units_by_round[s + k] - units_by_round[s]) / k >= before:
            return k
    return None
