"""orgteams: teams of agents that organize. The public face lives here (``run.py`` and the
entry points' ``config.py``, the CLI, play glue, experiments, replay) beside the leaves
``errors``, ``templates`` and ``lazy``.

Quick start::

    from orgteams import run_episode
    result = run_episode(task="prepare_afternoon_tea", organization="leader",
                         backend="planner", seed=0)

The environment alone: ``from orgteams.envs import household_v0``.
"""

from __future__ import annotations

from orgteams.lazy import lazy_exports

__version__ = "0.1.0"
__all__ = ["BackendPool", "EpisodeConfig", "run_episode", "build_team", "__version__"]

# Lazy, so `import orgteams.envs` stays light for RL code.
__getattr__, __dir__ = lazy_exports(__name__, {
    "BackendPool": "orgteams.agents.backends.pool",
    "EpisodeConfig": "orgteams.config",
    "build_team": "orgteams.run",
    "run_episode": "orgteams.run",
})
