"""The household world as PettingZoo envs (``household_v0``); its parts live in ``core/``,
``observe/``, ``highlevel/``, ``render/``, ``play/`` and the batched ``vector/``."""

from orgteams.envs import household_v0
from orgteams.envs.core.layout import Layout, list_layouts, load_layout
from orgteams.envs.core.tasks import list_tasks, load_task
from orgteams.envs.household import HouseholdEnv

__all__ = ["household_v0", "HouseholdEnv", "Layout", "list_layouts", "load_layout",
           "list_tasks", "load_task"]
