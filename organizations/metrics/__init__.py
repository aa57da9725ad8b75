"""What an episode measured: headline formulas over the log's records
(``episode_metrics.episode_metrics``), and the structure of its realised communication
and dependency graphs.
"""

from orgteams.organizations.metrics.episode_metrics import (
    EpisodeMetrics,
    aggregate,
    comm_tokens_per_step,
    communication_graph,
    dependency_graph,
    role_stability_index,
)
from orgteams.organizations.metrics.graph import (
    algebraic_connectivity,
    algebraic_connectivity_binary,
    centralization,
    hierarchy_depth,
    message_reach_depth,
    spectral_gap,
)

__all__ = ["EpisodeMetrics", "aggregate", "algebraic_connectivity",
           "algebraic_connectivity_binary", "centralization", "comm_tokens_per_step",
           "communication_graph", "dependency_graph", "hierarchy_depth",
           "message_reach_depth", "role_stability_index", "spectral_gap"]
