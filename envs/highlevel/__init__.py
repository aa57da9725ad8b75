"""High-level actions over several ticks: the options env, its discrete slots and
spaces, the plans behind each option, crowding, removal and goal shifts.

>>> from orgteams.envs.highlevel import HighLevelEnv
"""

from orgteams.envs.highlevel.highlevel_env import HighLevelAction, HighLevelEnv, PlanFailed

__all__ = ["HighLevelAction", "HighLevelEnv", "PlanFailed"]
