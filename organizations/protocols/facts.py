"""What each communicate protocol is, in one table: every other module reads it from here.

The stages a protocol runs each round are built by
:func:`orgteams.organizations.protocols.schedule.schedule`; the facts other parts need
(validation of an organization, the capability monitor, docs) are these.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROTOCOLS", "PROTOCOL_FACTS", "SELF_ORGANIZING", "ProtocolFacts"]


@dataclass(frozen=True)
class ProtocolFacts:
    """One protocol.

    Attributes:
        name: The name organizations use in their ``protocol`` field.
        needs_leader: Its stages are built around a leader (topology kind ``tiers``).
        self_organizing: Agents organize themselves (the self-organizing paper's
            protocols); the capability monitor may replace it with a structured one.
        stages: One line on the stages of a round.
        acts_in_order: Each speaker decides its action right after its own turn, seeing
            earlier speakers' chosen actions (``sequential``; ``batched_sequential`` a
            group at a time), instead of everyone acting at once after the
            communicate phase.
        from_history: Everyone decides at once from the shared history only: this
            round's messages are delivered after the act phase, and members get the
            :class:`~orgteams.agents.shared_context.SharedHistory` (``shared``).
    """

    name: str
    needs_leader: bool
    self_organizing: bool
    stages: str
    acts_in_order: bool = False
    from_history: bool = False


PROTOCOL_FACTS: dict[str, ProtocolFacts] = {f.name: f for f in (
    ProtocolFacts("free", False, False, "one stage per agent in team order, each sees all prior"),
    ProtocolFacts("leader_first", True, False,
                  "one stage per leader (top tier first), then one per other agent"),
    ProtocolFacts("coordinator", True, False,
                  "the top tier's plan, then everyone else at once seeing only the plan"),
    ProtocolFacts("broadcast", False, True,
                  "everyone's intention at once, then everyone's message seeing intentions"),
    ProtocolFacts("shared", False, True,
                  "everyone speaks and acts at once, from the shared history only (earlier "
                  "rounds and episodes); this round's messages arrive after the act phase",
                  from_history=True),
    ProtocolFacts("sequential", False, True,
                  "one stage per agent in fixed order, each deciding its action right after "
                  "its turn, seeing earlier agents' messages, claims and chosen actions",
                  acts_in_order=True),
    ProtocolFacts("sequential_messages", False, True,
                  "one stage per agent in fixed order seeing earlier messages, then "
                  "everyone acts at once (sequential before #11)"),
    ProtocolFacts("batched_sequential", False, True,
                  "sequential in groups: groups of batch_size agents in order, each "
                  "deciding its actions right after its turn, seeing earlier groups' "
                  "messages, claims and chosen actions", acts_in_order=True),
    ProtocolFacts("claim_shared", False, True,
                  "everyone's claim at once, then everyone's message seeing the claims"),
)}
PROTOCOLS: tuple[str, ...] = tuple(PROTOCOL_FACTS)
SELF_ORGANIZING: tuple[str, ...] = tuple(n for n, f in PROTOCOL_FACTS.items() if f.self_organizing)
