"""The SB3 adapter over the batched core: agents as entries, masks, episode ends."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.envs import household_v0

pytest.importorskip("stable_baselines3")

from orgteams.envs.vector.sb3 import AgentVecEnv  # noqa: E402

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "units": 1,
      "obs_mode": "flat", "reward_shaping": "subgoals", "max_ticks": 6}


def valid_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def test_entries_are_the_cores_agents_in_household_order():
    """The adapter steps its core with the entries' actions as (households, agents),
    and returns that core's arrays entry by entry: checked against a twin core."""
    adapter = AgentVecEnv(household_v0.vector_env(3, seed=11, **KW))
    twin = household_v0.vector_env(3, seed=11, **KW)
    assert adapter.num_envs == 6 and adapter.action_space.n == 53
    obs = adapter.reset()
    twin_obs, info = twin.reset()
    assert np.array_equal(obs, twin_obs.reshape(6, -1))
    assert np.array_equal(adapter.action_masks(), info["action_mask"].reshape(6, -1) == 1)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(20):
        actions = valid_actions(adapter.action_masks(), rng)
        obs, rewards, dones, infos = adapter.step(actions)
        t_obs, t_rew, t_term, t_trunc, t_info = twin.step(actions.reshape(3, 2))
        assert np.array_equal(obs, t_obs.reshape(6, -1))
        assert rewards.dtype == np.float32
        assert np.array_equal(rewards, t_rew.reshape(-1).astype(np.float32))
        assert np.array_equal(dones, (t_term | t_trunc).reshape(-1))
        assert np.array_equal(adapter.action_masks(), t_info["action_mask"].reshape(6, -1) == 1)
        for k, entry in enumerate(infos):
            i, a = divmod(k, 2)
            if not dones[k]:
                assert entry == {}
                continue
            ends += 1
            assert np.array_equal(entry["terminal_observation"], t_info["final_obs"][i][a])
            assert entry["TimeLimit.truncated"] == bool(t_trunc[i, a] and not t_term[i, a])
            assert entry["episode"]["l"] == t_info["final_info"]["episode"]["l"][i]
            assert entry["is_success"] == bool(t_term[i, a])
    assert ends >= 6 * 3  # every household finished its 6-tick episodes more than thrice


def test_sb3_seed_reaches_the_households():
    adapter = AgentVecEnv(household_v0.vector_env(2, **KW))
    adapter.seed(5)
    obs = adapter.reset()
    scalar = household_v0.parallel_env(**KW)
    first, _ = scalar.reset(seed=6)  # household 1 gets seed + 1
    assert np.array_equal(obs[2], first["agent_0"]) and np.array_equal(obs[3], first["agent_1"])


def test_masks_as_maskable_ppo_reads_them_and_errors():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    adapter = AgentVecEnv(household_v0.vector_env(2, seed=0, **KW))
    with pytest.raises(RuntimeError, match=re.escape("call reset() before action_masks()")):
        adapter.action_masks()
    with pytest.raises(RuntimeError,
                       match=re.escape("call step_async(actions) before step_wait()")):
        adapter.step_wait()
    adapter.reset()
    assert is_masking_supported(adapter)
    assert np.array_equal(get_action_masks(adapter), adapter.action_masks())
    assert np.array_equal(np.stack(adapter.env_method("action_masks", indices=[1, 3])),
                          adapter.action_masks()[[1, 3]])
    assert adapter.get_attr("render_mode") == [None] * 4
    with pytest.raises(AttributeError,
                       match=re.escape("AgentVecEnv has no per-env method 'render'")):
        adapter.env_method("render")
    with pytest.raises(AttributeError,
                       match=re.escape("AgentVecEnv has no per-env attribute 'spec'")):
        adapter.get_attr("spec")
    assert adapter.env_is_wrapped(object) == [False] * 4


def test_maskable_ppo_trains_on_it():
    from sb3_contrib import MaskablePPO

    adapter = AgentVecEnv(household_v0.vector_env(4, seed=0, **KW))
    model = MaskablePPO("MlpPolicy", adapter, n_steps=8, batch_size=32, n_epochs=1,
                        policy_kwargs={"net_arch": [16]}, verbose=0, seed=0)
    model.learn(128)
    assert model.num_timesteps == 128
    # Every sampled action was valid where it was taken (the masks reached the policy).
    obs = adapter.reset()
    for _ in range(10):
        masks = adapter.action_masks()
        actions, _ = model.predict(obs, action_masks=masks)
        assert masks[np.arange(8), actions].all()
        obs, *_ = adapter.step(actions)
