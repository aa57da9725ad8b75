"""Organizations: specs, the named library, turn-taking protocols and metrics.

>>> from orgteams.organizations import load_organization
>>> team = ["agent_0", "agent_1", "agent_2"]
>>> load_organization("leader").resolve(team).leaders
('agent_0',)
"""

from orgteams.agents.team import Team, display_names
from orgteams.organizations.metrics.episode_metrics import (
    EpisodeMetrics,
    aggregate,
    comm_tokens_per_step,
    communication_graph,
    episode_metrics,
    role_stability_index,
)
from orgteams.organizations.metrics.graph import (
    algebraic_connectivity,
    centralization,
    hierarchy_depth,
    spectral_gap,
)
from orgteams.organizations.protocols.facts import PROTOCOL_FACTS, PROTOCOLS, ProtocolFacts
from orgteams.organizations.protocols.schedule import (
    ElectionRecord,
    Stage,
    election_due,
    leader_for_round,
    record_election,
    resolve_claims,
    route,
    schedule,
    tally,
    visible_outputs,
)
from orgteams.organizations.rounds.episode import EpisodeState, RoundHooks, play_rounds
from orgteams.organizations.spec.library import (
    list_organizations,
    load_organization,
    organization_path,
)
from orgteams.organizations.spec.organization import SELF_CHOSEN, Organization
from orgteams.organizations.spec.resolved import ResolvedOrganization

__all__ = [
    "algebraic_connectivity",
    "PROTOCOLS",
    "PROTOCOL_FACTS",
    "SELF_CHOSEN",
    "ElectionRecord",
    "EpisodeMetrics",
    "EpisodeState",
    "Organization",
    "ProtocolFacts",
    "ResolvedOrganization",
    "RoundHooks",
    "Stage",
    "Team",
    "aggregate",
    "centralization",
    "comm_tokens_per_step",
    "communication_graph",
    "display_names",
    "election_due",
    "episode_metrics",
    "hierarchy_depth",
    "leader_for_round",
    "list_organizations",
    "load_organization",
    "organization_path",
    "play_rounds",
    "record_election",
    "resolve_claims",
    "role_stability_index",
    "route",
    "schedule",
    "spectral_gap",
    "tally",
    "visible_outputs",
]
