"""The batched household core: thousands of households stepped as numpy arrays.

:class:`VectorHouseholdEnv` (``household_v0.vector_env``) holds ``N`` households of
one layout as fixed-shape arrays (:mod:`.batch`) and steps them with the scalar
rules restated over the batch (:mod:`.dynamics`, :mod:`.masks`, :mod:`.observe`,
:mod:`.rewards`). The scalar env stays the reference: a differential test steps both
side by side and compares every tick. :class:`AgentVectorEnv`
(``household_v0.agent_vector_env``) is the same core as a Gymnasium ``VectorEnv`` with
every agent one sub-env (:mod:`.agents`).
"""

from orgteams.envs.vector.agents import AgentVectorEnv
from orgteams.envs.vector.env import VECTOR_OBS_MODES, VectorHouseholdEnv

__all__ = ["AgentVectorEnv", "VectorHouseholdEnv", "VECTOR_OBS_MODES"]
