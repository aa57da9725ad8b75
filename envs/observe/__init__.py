"""What an agent sees: array, flat and image observations (and their plain oracle),
text views, per-agent memory, and the global state for centralized critics.
"""

from orgteams.envs.observe.array_obs import ArrayObserver, observation_space
from orgteams.envs.observe.global_state import StateEncoder, state_space
from orgteams.envs.observe.memory import AgentMemory
from orgteams.envs.observe.reference import reference_observation
from orgteams.envs.observe.text import describe, describe_goal

__all__ = ["AgentMemory", "ArrayObserver", "StateEncoder", "describe", "describe_goal",
           "observation_space", "reference_observation", "state_space"]
