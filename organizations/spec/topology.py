"""The topology of an organization: tiers that resolve for any team size.

A :class:`Topology` says who leads whom: ``flat``, ``chain`` or ``tiers``, each
:class:`Tier` a number of agents, ``"rest"``, or a :class:`Share` of those not yet
placed (:func:`share_count`). :meth:`Organization.resolve
<orgteams.organizations.spec.organization.Organization.resolve>` places a real team in them.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from orgteams.errors import validation_line

MAX_ROLE_CHARS = 40  # a role name is said in every prompt and log line of its agents


def _role_name(value: str, least: int = 1) -> str:
    """A role name: one line of ``least`` to :data:`MAX_ROLE_CHARS` printable characters
    (an organization file is a person's text: a megabyte role would go into every prompt)."""
    if not least <= len(value) <= MAX_ROLE_CHARS or not value.isprintable():
        shown = value if len(value) <= MAX_ROLE_CHARS else value[:MAX_ROLE_CHARS] + "..."
        raise ValueError(f"must be {least} to {MAX_ROLE_CHARS} printable characters on one "
                         f"line, got {shown!r}")
    return value


def _member_role_name(value: str) -> str:
    # "" is no role at all (``orgteams play``'s teammates without an organization)
    return _role_name(value, least=0)


class Share(BaseModel):
    """A tier size as a share of the agents not yet placed: ``clamp(floor(fraction * left))``."""

    model_config = ConfigDict(extra="forbid")
    fraction: float = Field(gt=0, le=1)
    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)


class Tier(BaseModel):
    """One level of a hierarchy. Agents fill tiers in team order (agent_0 first).

    ``count`` is a number (0 or more), ``"rest"`` (every agent not yet placed) or a :class:`Share`;
    ``agents`` names agents explicitly instead. Each agent of a tier reports to one
    agent of the nearest non-empty tier above, in contiguous equal shares
    (6 members under 2 vice leaders: 3 each; the first leaders take the remainder).
    """

    model_config = ConfigDict(extra="forbid")
    role: str
    count: int | Literal["rest"] | Share = 1
    agents: list[str] | None = None

    _role = field_validator("role")(_role_name)

    @field_validator("count", mode="before")
    @classmethod
    def _check_count(cls, count: object) -> object:
        # Checked before the union: a negative count would slice from the end (-1 of 6
        # agents: 5 leaders), and the union's own errors name its three branches.
        if (isinstance(count, int) and not isinstance(count, bool) and count >= 0) or (
            count == "rest" or isinstance(count, Share)
        ):
            return count
        if isinstance(count, dict):
            try:
                return Share.model_validate(count)
            except ValidationError as exc:
                raise ValueError(f"share {validation_line(exc)}") from None
        raise ValueError(
            f"must be a number of agents (0 or more), 'rest' or a share such as "
            f"{{fraction: 0.5}}, got {count!r}"
        )


class Topology(BaseModel):
    """Who leads whom.

    ``kind``: ``flat`` (no leaders; everyone has ``member_role``), ``chain`` (agent_i
    passes to agent_{i+1}; no leaders) or ``tiers`` (a hierarchy; the last tier must have
    ``count: rest`` and holds the members; every earlier tier's agents are leaders).
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["flat", "chain", "tiers"] = "flat"
    tiers: list[Tier] = Field(default_factory=list)
    member_role: str = "member"

    _member_role = field_validator("member_role")(_member_role_name)

    @model_validator(mode="after")
    def _check_tiers(self) -> Topology:
        if self.kind == "tiers":
            if not self.tiers:
                raise ValueError("kind 'tiers' needs at least one tier")
            if self.tiers[-1].count != "rest" or self.tiers[-1].agents is not None:
                raise ValueError("the last tier must have count 'rest' so every agent has a place")
            if any(t.count == "rest" for t in self.tiers[:-1]):
                raise ValueError("only the last tier may have count 'rest'")
        elif self.tiers:
            raise ValueError(f"kind {self.kind!r} takes no tiers; use kind 'tiers'")
        return self


def share_count(share: Share, left: int) -> int:
    """Size of a :class:`Share` tier given ``left`` unplaced agents (never more than left)."""
    k = max(share.min, math.floor(share.fraction * left))
    if share.max is not None:
        k = min(k, share.max)
    return min(k, left)


__all__ = ["Share", "Tier", "Topology", "share_count"]
