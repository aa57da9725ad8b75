"""What an episode measured: headline formulas over the log's records, and the
structure of the realised communication graph.
"""

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

__all__ = ["EpisodeMetrics", "aggregate", "algebraic_connectivity", "centralization",
           "comm_tokens_per_step", "communication_graph", "episode_metrics",
           "hierarchy_depth", "role_stability_index", "spectral_gap"]
