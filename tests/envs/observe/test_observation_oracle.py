"""Differential test: the fast array observations against the plain reference, tick by tick."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs.household import HouseholdEnv
from orgteams.envs.observe.reference import reference_observation


@pytest.mark.parametrize(("layout", "agents", "radius", "full"), [
    ("studio", 2, 7, False),      # small team: cached windows, per-pair teammate marks
    ("apartment", 3, 3, False),
    ("house", 12, 5, False),      # large team: the whole-house buffer path
    ("apartment", 4, 4, True),    # full observability
])
def test_fast_observations_equal_the_reference_over_random_episodes(layout, agents, radius,
                                                                    full):
    env = HouseholdEnv(layout=layout, num_agents=agents, view_radius=radius,
                       full_observability=full)
    rng = np.random.default_rng(agents * 100 + radius)
    checked = 0
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        for _ in range(60):
            for i, a in enumerate(env.agents):
                want = reference_observation(env.world, i, radius, full)
                for key in ("image", "hands", "goal"):
                    np.testing.assert_array_equal(obs[a][key], want[key],
                                                  err_msg=f"{key} of {a}, tick {env.world.tick}")
                checked += 1
            if not env.agents:
                break
            actions = {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}
            obs, *_ = env.step(actions)
    assert checked >= 2 * agents * 30  # the episodes really ran
