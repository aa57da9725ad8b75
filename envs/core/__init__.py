"""The world and its pure dynamics: state, transition, actions, layouts, tasks,
episode starts, rewards, masks, navigation and the documented caps.

>>> from orgteams.envs.core import load_layout, transition
"""

from orgteams.envs.core.actions import NUM_ACTIONS, Action, Verb, decode, encode
from orgteams.envs.core.dynamics import Event, transition
from orgteams.envs.core.layout import Layout, list_layouts, load_layout
from orgteams.envs.core.masks import action_masks
from orgteams.envs.core.navigation import Navigator, Walker
from orgteams.envs.core.rewards import TeamReward
from orgteams.envs.core.start import make_episode
from orgteams.envs.core.state import HouseholdState, Scene, is_walkable
from orgteams.envs.core.tasks import Predicate, TaskSpec, list_tasks, load_task

__all__ = ["NUM_ACTIONS", "Action", "Event", "HouseholdState", "Layout", "Navigator",
           "Predicate", "Scene", "TaskSpec", "TeamReward", "Verb", "Walker", "action_masks",
           "decode", "encode", "is_walkable", "list_layouts", "list_tasks", "load_layout",
           "load_task", "make_episode", "transition"]
