"""How the communicate phase takes turns: the protocols' facts in one table, and one
round's stages (``schedule.schedule``), visibility, routing, claims and votes as pure data.
"""

from orgteams.organizations.protocols.facts import PROTOCOL_FACTS, PROTOCOLS, ProtocolFacts
from orgteams.organizations.protocols.schedule import (
    ElectionRecord,
    Stage,
    election_due,
    leader_for_round,
    record_election,
    resolve_claims,
    route,
    tally,
    visible_outputs,
)

__all__ = ["PROTOCOLS", "PROTOCOL_FACTS", "ElectionRecord", "ProtocolFacts", "Stage",
           "election_due", "leader_for_round", "record_election", "resolve_claims", "route",
           "tally", "visible_outputs"]
