"""What an episode measured: headline formulas over the log's records
(``episode_metrics.episode_metrics``), and the realised communication graph's structure.
"""

from orgteams.organizations.metrics.episode_metrics import (
    EpisodeMetrics,
    aggregate,
    comm_tokens_per_step,
    communication_graph,
    role_stability_index,
)
from orgteams.organizations.metrics.graph import (
    algebraic_connectivity,
    centralization,
    hierarchy_depth,
    spectral_gap,
)

__all__ = ["EpisodeMetrics", "aggregate", "algebraic_connectivity", "centralization",
           "comm_tokens_per_step", "communication_graph", "hierarchy_depth",
           "role_stability_index", "spectral_gap"]
