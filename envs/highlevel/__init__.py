"""High-level actions over several ticks: the options env, its discrete slots and
spaces, the plans behind each option, crowding, removal and goal shifts.

>>> from orgteams.envs.highlevel import HighLevelEnv
"""

from orgteams.envs.highlevel.highlevel_env import HighLevelAction, HighLevelEnv, PlanFailed
from orgteams.envs.highlevel.space import ActionId

__all__ = ["ActionId", "HighLevelAction", "HighLevelEnv", "PlanFailed"]
