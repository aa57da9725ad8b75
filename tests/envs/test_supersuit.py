"""household_v0 under SuperSuit's vector-env wrappers, as RL code uses it."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS

ss = pytest.importorskip("supersuit")

SHAPES = {"image": (15, 15, 21), "hands": (2,), "goal": (5, 3)}


def vec_env(num_agents: int = 3, copies: int = 1, **kwargs):
    env = ss.pettingzoo_env_to_vec_env_v1(
        household_v0.parallel_env(num_agents=num_agents, **kwargs))
    if copies > 1:
        env = ss.concat_vec_envs_v1(env, copies, num_cpus=0, base_class="gymnasium")
    return env


def check_batch(obs, n: int) -> None:
    assert set(obs) == set(SHAPES)
    for key, shape in SHAPES.items():
        assert obs[key].shape == (n, *shape)
        assert obs[key].dtype == np.uint8


def test_vector_env_of_agents_resets_and_steps():
    env = vec_env(num_agents=3)
    assert env.num_envs == 3
    assert env.action_space.n == NUM_ACTIONS
    obs, infos = env.reset(seed=0)
    check_batch(obs, 3)
    for _ in range(10):
        actions = np.array([env.action_space.sample() for _ in range(env.num_envs)])
        obs, rewards, terms, truncs, infos = env.step(actions)
        check_batch(obs, 3)
        assert rewards.shape == terms.shape == truncs.shape == (3,)
        assert len(infos) == 3
    env.close()


def test_vector_obs_match_the_parallel_env():
    env = vec_env(num_agents=2)
    obs, _ = env.reset(seed=4)
    plain = household_v0.parallel_env(num_agents=2)
    ref, _ = plain.reset(seed=4)
    for i, agent in enumerate(plain.possible_agents):
        for key in SHAPES:
            assert np.array_equal(obs[key][i], ref[agent][key])


def test_concatenated_copies_step_through_episode_ends():
    env = vec_env(num_agents=3, copies=2, max_ticks=5)
    assert env.num_envs == 6
    obs, _ = env.reset(seed=1)
    check_batch(obs, 6)
    ended = 0
    for _ in range(12):  # two truncations per copy: the vector env resets by itself
        obs, rewards, terms, truncs, _ = env.step(np.zeros(env.num_envs, dtype=np.int64))
        check_batch(obs, 6)
        ended += int(truncs.sum())
    assert ended == 2 * 6
    env.close()


def test_vector_env_on_a_generated_layout_with_many_agents():
    env = vec_env(num_agents=64, layout="generated:8:0")
    obs, _ = env.reset(seed=0)
    check_batch(obs, 64)
    obs, rewards, *_ = env.step(np.ones(64, dtype=np.int64))
    assert rewards.shape == (64,)
