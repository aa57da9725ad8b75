"""orgteams: teams of agents that organize.

Quick start::

    from orgteams import run_episode
    result = run_episode(task="prepare_afternoon_tea", organization="leader",
                         backend="planner", seed=0)

The environment alone: ``from orgteams.envs import household_v0``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["BackendPool", "run_episode", "build_team", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy, so `import orgteams.envs` stays light for RL code.
    if name == "BackendPool":
        from orgteams.agents.backends.pool import BackendPool

        return BackendPool
    if name in ("run_episode", "build_team"):
        from orgteams import run

        return getattr(run, name)
    raise AttributeError(f"module 'orgteams' has no attribute {name!r}")
