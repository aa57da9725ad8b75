"""flat and image observations under SuperSuit's wrappers and SB3's policies, with no glue."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs import household_v0

ss = pytest.importorskip("supersuit")

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "max_ticks": 40}


def run(env, ticks: int = 50):
    """Random play through at least one episode end; returns the last observations."""
    obs, _ = env.reset(seed=0)
    for _ in range(ticks):
        if not env.agents:
            obs, _ = env.reset()
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    return obs


def test_supersuit_wrappers_take_the_flat_observation():
    base = household_v0.parallel_env(**KW, obs_mode="flat")
    d = base.observation_space("agent_0").shape[0]
    env = ss.agent_indicator_v0(ss.frame_stack_v1(ss.dtype_v0(ss.flatten_v0(
        household_v0.parallel_env(**KW, obs_mode="flat")), np.float32), 3))
    space = env.observation_space("agent_0")
    assert space.shape == (3 * d + 2,) and space.dtype == np.float32
    obs = run(env)
    for a, o in obs.items():
        assert space.contains(o)
        assert o[-2 + int(a[-1])] == space.high[-1]  # the agent's indicator is set


def test_supersuit_frame_stack_takes_the_image_observation():
    env = ss.frame_stack_v1(household_v0.parallel_env(**KW, obs_mode="image", image_scale=1), 2)
    space = env.observation_space("agent_0")
    obs = run(env)
    assert all(space.contains(o) for o in obs.values())


def test_parallel_api_with_masks_in_the_observation():
    from pettingzoo.test import parallel_api_test

    env = household_v0.parallel_env(**KW, obs_mode="flat", action_mask_in_obs=True)
    parallel_api_test(env, num_cycles=60)


@pytest.mark.parametrize(("mode", "policy"), [("flat", "MlpPolicy"), ("image", "CnnPolicy")])
def test_sb3_ppo_learns_on_the_supersuit_vector_env(mode, policy):
    sb3 = pytest.importorskip("stable_baselines3", reason="needs the rl extra")
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(
        household_v0.parallel_env(**KW, obs_mode=mode)), 2, num_cpus=0,
        base_class="stable_baselines3")
    assert venv.num_envs == 4
    model = sb3.PPO(policy, venv, n_steps=16, batch_size=32, n_epochs=1, verbose=0,
                    policy_kwargs={"net_arch": [32]} if mode == "flat" else None)
    model.learn(128)
    obs = venv.reset()
    actions, _ = model.predict(obs)
    assert actions.shape == (4,) and all(0 <= a < 53 for a in actions)
    venv.close()
