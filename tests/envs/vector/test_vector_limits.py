"""What the batched core refuses before it allocates anything (issue 24, issue 25):
households that would not fit in memory, and ``backend="jax"`` without JAX."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from orgteams.envs import household_v0
from orgteams.envs.vector import env as vector_env_module
from orgteams.envs.vector.env import HOUSEHOLD_STATE_BYTES, OBSERVATION_COPIES, estimated_bytes
from orgteams.errors import MissingExtraError, UserError


def test_households_past_the_memory_available_are_one_line(monkeypatch):
    """20,000 households took 4.3 GB and swapped; now the estimate refuses them first."""
    monkeypatch.setattr(vector_env_module, "memory_available", lambda: 4 * 2**30)
    small = household_v0.vector_env(num_envs=2, layout="studio")
    per = estimated_bytes(1, 3, small.single_observation_space)
    assert per == OBSERVATION_COPIES * 3 * 4 * small.single_observation_space.shape[0] \
        + HOUSEHOLD_STATE_BYTES
    need = 20_000 * per
    assert need > 4 * 2**30
    with pytest.raises(UserError, match=re.escape(
            f"num_envs=20000 needs about {need / 2**30:.1f} GiB ({per / 1024:.0f} KiB per "
            "household of 3 agents, mostly observations), more than the 4.0 GiB of memory "
            "available; use fewer households or observations=False")):
        household_v0.vector_env(num_envs=20_000, layout="studio")
    # without observations a household is its state: many more fit
    env = household_v0.vector_env(num_envs=20_000, layout="studio", observations=False)
    assert env.num_envs == 20_000
    monkeypatch.setattr(vector_env_module, "memory_available", lambda: None)  # unknown
    assert household_v0.vector_env(num_envs=20_000, layout="studio").num_envs == 20_000


def test_the_estimate_grows_with_agents_and_image_observations():
    flat1 = household_v0.vector_env(2, layout="studio", num_agents=1)
    image1 = household_v0.vector_env(2, layout="studio", num_agents=1, obs_mode="image")
    one = estimated_bytes(1, 1, flat1.single_observation_space)
    assert estimated_bytes(10, 8, flat1.single_observation_space) == 10 * (
        8 * (one - HOUSEHOLD_STATE_BYTES) + HOUSEHOLD_STATE_BYTES)
    assert estimated_bytes(1, 1, image1.single_observation_space) > one
    assert estimated_bytes(5, 3, flat1.single_observation_space, observations=False) == \
        5 * HOUSEHOLD_STATE_BYTES


def test_a_missing_jax_is_the_missing_extra_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax raises ImportError
    monkeypatch.delitem(sys.modules, "orgteams.envs.vector.functional.core", raising=False)
    with pytest.raises(MissingExtraError, match=re.escape(
            'backend="jax" needs the "jax" extra: pip install "orgteams[jax]"')):
        household_v0.vector_env(2, backend="jax")
    # the arguments are checked first: a wrong one is named even without JAX
    with pytest.raises(ValueError, match=re.escape("obs_dtype=np.uint8 is for obs_mode='flat' "
                                                   "with the numpy backend")):
        household_v0.vector_env(2, backend="jax", obs_dtype=np.uint8)
