"""The organization's rules as one member is told them, and the rules' shared mechanics.

:class:`MemberRules` is what the round loop gives a member with every
:class:`~orgteams.agents.member.CommunicateContext` (``ctx.rules``): the
organization's machine-readable rules (:mod:`orgteams.organizations.spec.rules`) resolved
for this agent (its report receivers, its boss and reports, whether it assigns work,
who leads now). It is
plain data so ``agents`` needs nothing from ``organizations``.

:func:`choose_vote` casts a ballot by the election rule and :func:`within_budget` keeps
a member's messages within the per-round budget; every member kind that votes or
speaks without a model (planner, random) uses them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["ROLE_VOCABULARY", "MemberRules", "choose_vote", "within_budget"]

ROLE_VOCABULARY = ("coordinator", "gatherer", "placer", "explorer", "standby")
"""Roles a member without a model claims under self-chosen roles: it assigns work
(coordinator), goes to grab goal objects (gatherer), carries them to their target
(placer), explores (explorer) or has nothing useful to do (standby)."""

T = TypeVar("T")


@dataclass(frozen=True)
class MemberRules:
    """An organization's rules for one member (defaults: the ``Rules`` defaults).

    Attributes:
        assign_work: ``leader``, ``self`` or ``claim``.
        report_when: ``every_round``, ``on_completion``, ``on_new_information``, ``never``.
        report_to: Agent ids its reports go to; None: everyone.
        max_messages: Messages it may send per round, or None.
        max_tokens: Message tokens it may send per round, or None.
        corrections: It may correct the leader.
        vote: The election rule's ``vote``; ``vote_seed`` its seed (``random``).
        leaders: The top leader(s) now.
        boss: The leader it reports to and takes orders from (None: the top or no tier,
            or a member outside an organization).
        reports: The agents it leads directly (its reports in the topology, in team
            order): the only ones a leader gives orders to, so orders never skip or
            cross tiers (a top leader orders its vice leaders, a vice leader its
            members, each of two leaders its own half).
        peers: The other leaders of its tier under the same boss (a dual leader's
            other leader): it coordinates with them by messages, never by orders.
        assigns: This member assigns work: a leader of any tier that has reports,
            under ``assign_work: leader``.
        may_abstain: It may abstain (``allow_abstain``).
        self_chosen_roles: It chooses its own role.
    """

    assign_work: str = "claim"
    report_when: str = "on_new_information"
    report_to: tuple[str, ...] | None = None
    max_messages: int | None = None
    max_tokens: int | None = None
    corrections: bool = False
    vote: str = "progress"
    vote_seed: int = 0
    leaders: tuple[str, ...] = ()
    boss: str | None = None
    reports: tuple[str, ...] = ()
    peers: tuple[str, ...] = ()
    assigns: bool = False
    may_abstain: bool = False
    self_chosen_roles: bool = False

    @property
    def claims(self) -> bool:
        """It announces and respects claims (``assign_work`` is ``claim`` or ``leader``:
        members under a leader claim what they do, so the leader assigns around it)."""
        return self.assign_work != "self"


def _natural(agent: str) -> tuple[str, int]:
    m = re.fullmatch(r"(.*?)(\d+)", agent)
    return (m.group(1), int(m.group(2))) if m else (agent, -1)


def choose_vote(rules: MemberRules, me: str, candidates: Sequence[str], round_index: int,
                progress: Mapping[str, Any] | None = None) -> str:
    """A ballot by the election rule: whom ``me`` votes for among ``candidates``.

    ``progress``: what each agent achieved as far as ``me`` knows, comparable values
    (planners: ``(goal objects placed, goal objects found)``). ``progress`` votes for
    the most (ties: the current leader, then team order), ``round_robin`` for
    the candidate after the current leader, ``lowest_id`` for the first, ``random`` draws
    with ``(vote_seed, round, me)``, ``self`` votes for itself.

    Raises:
        ValueError: No candidates.
    """
    if not candidates:
        raise ValueError("choose_vote() needs at least one candidate")
    order = sorted(candidates, key=_natural)
    current = next((a for a in rules.leaders if a in order), None)
    if rules.vote == "self" and me in order:
        return me
    if rules.vote == "lowest_id":
        return order[0]
    if rules.vote == "round_robin":
        return order[(order.index(current) + 1) % len(order)] if current else order[0]
    if rules.vote == "random":
        return random.Random(f"{rules.vote_seed}:{round_index}:{me}").choice(order)
    known = progress or {}
    zero = next(iter(known.values()), 0)
    zero = (0,) * len(zero) if isinstance(zero, tuple) else 0
    best = max(known.get(a, zero) for a in order)
    tied = [a for a in order if known.get(a, zero) == best]
    return current if current in tied else tied[0]


def within_budget(items: Sequence[T], rules: MemberRules, tokens: Callable[[T], int],
                  spent: tuple[int, int] = (0, 0)) -> tuple[list[T], list[T]]:
    """Split ``items`` (most important first) into ``(kept, dropped)`` under the budget,
    ``spent`` (messages, tokens) being what was already sent this round. ``tokens`` is
    asked only under a token budget: without one no count can change what is kept (a
    256-agent team says hundreds of messages a round)."""
    if rules.max_messages is None and rules.max_tokens is None:
        return list(items), []
    kept: list[T] = []
    dropped: list[T] = []
    sent, used = spent
    for item in items:
        n = tokens(item) if rules.max_tokens is not None else 0
        if (rules.max_messages is not None and sent + len(kept) >= rules.max_messages) or (
                rules.max_tokens is not None and used + n > rules.max_tokens):
            dropped.append(item)
        else:
            kept.append(item)
            used += n
    return kept, dropped
