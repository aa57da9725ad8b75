"""Succession: who takes the seat of a member a shock removed (the rules' ``succession``).

A seat is a place in the topology: a tier's place with its boss and its reports, or a
link of a chain. The rules' ``succession`` says what happens to a removed member's seat:

* ``next``: its first report (team order) moves up into it, with its boss, its reports
  and its role; the seat that one left is filled the same way, down the tiers (a
  pyramid's vice leader becomes the leader, and the vice leader's first member the
  vice leader). A seat with no reports below it goes away. A chain closes around the
  gap: the next link takes the removed one's channels.
* ``elect``: the team votes at the start of the shock's round (a ``vote`` stage by
  the rules' ``election``); the winner takes a removed top leader's place. Until the
  ballots are counted the seat is filled as by ``next``, and a mid leader's seat
  always is (an election only chooses the top tier).
* ``none``: nobody takes the seat; the removed member keeps its place and channels
  (messages to it are dropped), as before succession existed.

:func:`vacate` moves the seats (called by
:meth:`~orgteams.organizations.spec.resolved.ResolvedOrganization.build`);
:func:`succession_event` says what a removal changed, for the ``succession`` event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orgteams.organizations.spec.resolved import ResolvedOrganization

__all__ = ["successor_of", "succession_event", "vacate"]


def vacate(seats: list[list[str]], reports_to: dict[str, str | None], team: Sequence[str],
           agent: str) -> str | None:
    """Take ``agent`` out of its seat (in place); its first report moves up into it.

    Args:
        seats: The agents of each tier, top first (changed in place).
        reports_to: Each agent's boss (changed in place).
        team: Agent ids in team order ("first report" is first in it).
        agent: The member leaving.

    Returns:
        The agent that took the seat, or None when ``agent`` led nobody (its seat goes).
    """
    reports = [a for a in team if reports_to.get(a) == agent]
    tier = next((s for s in seats if agent in s), None)
    successor = reports[0] if reports else None
    if successor is not None:
        vacate(seats, reports_to, team, successor)  # its own seat goes to its first report
        for a in team:
            if reports_to.get(a) == agent:
                reports_to[a] = successor
        reports_to[successor] = reports_to[agent]
        if tier is not None:
            tier[tier.index(agent)] = successor
    elif tier is not None:
        tier.remove(agent)
    reports_to[agent] = None
    return successor


def successor_of(resolved: ResolvedOrganization, agent: str) -> str | None:
    """Who takes ``agent``'s seat under ``next`` in ``resolved`` (before the removal):
    its first report still in the team, or (chain) the next link; None when nobody."""
    if resolved.organization.topology.kind == "chain":
        after = [b for b in resolved.team if resolved.graph.has_edge(agent, b)]
        return after[0] if after else None
    reports = [a for a in resolved.members_of(agent) if a not in resolved.removed]
    return reports[0] if reports else None


def succession_event(before: ResolvedOrganization, after: ResolvedOrganization, agent: str,
                     successor: str | None, *, shock: str) -> dict[str, Any] | None:
    """What the ``succession`` event records about ``agent``'s seat, or None when nobody
    took anything over (a member that led nobody, ``succession: none``).

    Returns:
        ``agent``, its ``role``, the ``successor``, the ``rule``, the ``shock`` kind,
        the top ``leaders`` now, the ``roles`` that changed (``{agent: [before,
        after]}``) and the ``channels`` each active member gained (``{agent: [...]}``).
    """
    rule = after.organization.rules.succession
    if rule == "none" or successor is None:
        return None
    active = [a for a in after.team if a not in after.removed]
    roles = {a: [before.role_of(a), after.role_of(a)] for a in active
             if before.role_of(a) != after.role_of(a)}
    gained = {a: new for a in active
              if (new := [b for b in after.receivers_of(a)
                          if b not in before.receivers_of(a)])}
    return {"agent": agent, "role": before.role_of(agent), "successor": successor,
            "rule": rule, "shock": shock, "leaders": list(after.top_leaders),
            "roles": roles, "channels": gained}
