"""Organizations: what one is (``spec/``), how the communicate phase takes turns
(``protocols/``), the decision-round loop (``rounds/``), what an episode measured (``metrics/``).

>>> from orgteams.organizations import load_organization
>>> team = ["agent_0", "agent_1", "agent_2"]
>>> load_organization("leader").resolve(team).leaders
('agent_0',)
"""

from orgteams.agents.team import Team, display_names
from orgteams.organizations.metrics import (
    EpisodeMetrics,
    aggregate,
    algebraic_connectivity,
    algebraic_connectivity_binary,
    centralization,
    comm_tokens_per_step,
    communication_graph,
    dependency_graph,
    hierarchy_depth,
    message_reach_depth,
    role_stability_index,
    spectral_gap,
)
from orgteams.organizations.metrics.episode_metrics import episode_metrics
from orgteams.organizations.protocols import (
    PROTOCOL_FACTS,
    PROTOCOLS,
    ElectionRecord,
    ProtocolFacts,
    Stage,
    election_due,
    leader_for_round,
    record_election,
    resolve_claims,
    route,
    tally,
    visible_outputs,
)
from orgteams.organizations.protocols.schedule import schedule
from orgteams.organizations.rounds import (
    EpisodeResult,
    EpisodeState,
    EpisodeSummary,
    RoundHooks,
    Shock,
    TeamRunner,
    play_rounds,
    run_team,
)
from orgteams.organizations.spec import (
    SELF_CHOSEN,
    Organization,
    ResolvedOrganization,
    list_organizations,
    load_organization,
    organization_path,
)

__all__ = [
    "algebraic_connectivity",
    "algebraic_connectivity_binary",
    "PROTOCOLS",
    "PROTOCOL_FACTS",
    "SELF_CHOSEN",
    "ElectionRecord",
    "EpisodeMetrics",
    "EpisodeResult",
    "EpisodeState",
    "EpisodeSummary",
    "Organization",
    "ProtocolFacts",
    "ResolvedOrganization",
    "RoundHooks",
    "Shock",
    "Stage",
    "Team",
    "TeamRunner",
    "aggregate",
    "centralization",
    "comm_tokens_per_step",
    "communication_graph",
    "dependency_graph",
    "display_names",
    "election_due",
    "episode_metrics",
    "hierarchy_depth",
    "message_reach_depth",
    "leader_for_round",
    "list_organizations",
    "load_organization",
    "organization_path",
    "play_rounds",
    "record_election",
    "resolve_claims",
    "role_stability_index",
    "route",
    "run_team",
    "schedule",
    "spectral_gap",
    "tally",
    "visible_outputs",
]
