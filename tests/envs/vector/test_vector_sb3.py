"""The SB3 adapter over the batched core: agents as entries, masks, episode ends."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.envs import household_v0

pytest.importorskip("stable_baselines3", reason="needs the rl extra")

from orgteams.envs.vector.sb3 import AgentVecEnv, ScalarAgentVecEnv  # noqa: E402

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


def small_model(adapter, **kwargs):
    """A MaskablePPO whose features go through RawScale (uint8 observations back to the
    float32 entries), so runs on float32 and uint8 observations can be compared."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.torch_layers import FlattenExtractor

    from orgteams.envs.vector.sb3_learner import RawScale

    class Scaled(FlattenExtractor):
        def __init__(self, space):
            super().__init__(space)
            self.scale = RawScale(space)

        def forward(self, obs):
            return super().forward(self.scale(obs))

    return MaskablePPO("MlpPolicy", adapter, n_steps=8, batch_size=12, n_epochs=2,
                       policy_kwargs={"net_arch": [16], "features_extractor_class": Scaled},
                       verbose=0, seed=3, **kwargs)


def test_raw_scale_gives_back_the_float32_observations_bit_for_bit():
    import torch

    from orgteams.envs.vector.sb3_learner import RawScale

    raw = AgentVecEnv(household_v0.vector_env(3, seed=4, obs_dtype=np.uint8, **KW))
    floats = AgentVecEnv(household_v0.vector_env(3, seed=4, **KW))
    assert raw.observation_space.dtype == np.uint8
    scale = RawScale(raw.observation_space)
    obs_raw, obs_float = raw.reset(), floats.reset()
    rng = np.random.default_rng(2)
    for _ in range(8):
        assert obs_raw.dtype == np.uint8 and obs_float.dtype == np.float32
        back = scale(torch.as_tensor(obs_raw).float()).numpy()
        assert np.array_equal(back, obs_float)  # exact, not approximately
        actions = valid_actions(raw.action_masks(), rng)
        obs_raw, obs_float = raw.step(actions)[0], floats.step(actions)[0]
    assert ((obs_float > 0) & (obs_float < 1)).any()  # scaled counts, not only 0/1
    plain = RawScale(floats.observation_space)
    x = torch.as_tensor(obs_float)
    assert plain(x) is x  # float spaces pass through


def test_gather_buffer_and_uint8_train_the_same_parameters_as_sb3_contrib():
    """The learner the example uses (uint8 observations, GatherRolloutBuffer) ends with
    the same parameters, bit for bit, as MaskablePPO with its own buffer on float32
    observations: the same minibatches of the same inputs."""
    import torch

    from orgteams.envs.vector.sb3_learner import GatherRolloutBuffer

    runs = {}
    for name, dtype, buffer in (("sb3", np.float32, None),
                                ("gather", np.float32, GatherRolloutBuffer),
                                ("gather uint8", np.uint8, GatherRolloutBuffer)):
        adapter = AgentVecEnv(household_v0.vector_env(3, seed=0, obs_dtype=dtype, **KW))
        model = small_model(adapter, rollout_buffer_class=buffer)
        assert type(model.rollout_buffer).__name__ == (
            "GatherRolloutBuffer" if buffer else "MaskableRolloutBuffer")
        before = torch.cat([p.detach().flatten().clone() for p in model.policy.parameters()])
        model.learn(3 * 6 * 8)  # three rollouts of 6 entries x 8 ticks
        runs[name] = torch.cat([p.detach().flatten() for p in model.policy.parameters()])
        assert not torch.equal(runs[name], before)  # it did learn something
    assert torch.equal(runs["gather"], runs["sb3"])
    assert torch.equal(runs["gather uint8"], runs["sb3"])


def test_gather_buffer_yields_sb3_contribs_minibatches_and_refuses_early_reads():
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer

    from orgteams.envs.vector.sb3_learner import GatherRolloutBuffer

    space = spaces.Box(0, 255, (5,), np.uint8)
    buffers = [cls(4, space, spaces.Discrete(3), n_envs=3)
               for cls in (MaskableRolloutBuffer, GatherRolloutBuffer)]
    rng = np.random.default_rng(0)
    with pytest.raises(RuntimeError,
                       match=re.escape("the rollout buffer is read before it is full")):
        next(buffers[1].get(4))
    for _ in range(4):
        step = (rng.integers(0, 255, (3, 5), np.uint8), rng.integers(0, 3, (3, 1)),
                rng.random(3).astype(np.float32), np.zeros(3, np.float32),
                torch.as_tensor(rng.random(3)), torch.as_tensor(rng.random(3)))
        masks = rng.random((3, 3)) < 0.5
        for b in buffers:
            b.add(*step, action_masks=masks)
    for b in buffers:
        b.compute_returns_and_advantage(torch.zeros(3), np.zeros(3))
    for _ in range(2):  # a second epoch reads the already flattened arrays
        np.random.seed(7)
        ours = list(buffers[0].get(5))
        np.random.seed(7)
        theirs = list(buffers[1].get(5))
        assert [len(x.observations) for x in ours] == [5, 5, 2]
        for a, b in zip(ours, theirs):
            assert b.observations.dtype == torch.uint8
            for field_a, field_b in zip(a, b):
                assert torch.equal(field_a, field_b)


def test_scalar_agent_vec_env_batches_agents_and_their_masks():
    """The scalar path's adapter: every agent of every copy one entry, masks from the
    env, SB3's end-of-episode keys when the step limit cuts an episode short."""
    venv = ScalarAgentVecEnv(2, **{**KW, "max_ticks": 5})
    assert venv.num_envs == 4
    obs = venv.reset()
    assert obs.shape == (4, *venv.observation_space.shape) and obs.dtype == np.float32
    masks = venv.action_masks()
    assert masks.shape == (4, 53) and masks[:, 0].all()
    for _ in range(5):
        venv.step_async(np.array([int(np.flatnonzero(m)[-1]) for m in venv.action_masks()]))
        obs, rewards, dones, infos = venv.step_wait()
    assert dones.all() and all("terminal_observation" in i and "episode" in i for i in infos)
    assert all(i["TimeLimit.truncated"] for i in infos)
    assert np.array_equal(np.stack(venv.env_method("action_masks")), venv.action_masks())


def test_the_adapter_refuses_a_next_step_core():
    """SB3 resets finished entries in the same step; a NEXT_STEP core would hand it a
    step that plays nothing."""
    with pytest.raises(ValueError, match=re.escape(
            "AgentVecEnv needs a vector env that resets in the same step (SB3's "
            "convention): autoreset_mode=AutoresetMode.SAME_STEP, got NextStep")):
        AgentVecEnv(household_v0.vector_env(2, autoreset_mode="NextStep", **KW))


def test_scalar_agent_vec_env_defaults_to_flat_and_refuses_dict_observations():
    """docs/rl.md's MaskablePPO("MlpPolicy", ...) on ScalarAgentVecEnv(copies, layout=...)
    failed: parallel_env's default obs_mode, "array", is a dict per agent, stacked into
    an object array SB3 cannot read."""
    from sb3_contrib import MaskablePPO

    venv = ScalarAgentVecEnv(2, layout="studio", num_agents=2)
    assert venv.envs[0].obs_mode == "flat"
    MaskablePPO("MlpPolicy", venv, n_steps=8, batch_size=16).learn(16)
    assert ScalarAgentVecEnv(1, layout="studio", obs_mode="image").reset().dtype == np.uint8
    for mode in ("array", "text"):
        with pytest.raises(ValueError, match=re.escape(
                f"obs_mode must be one of ('flat', 'image') for ScalarAgentVecEnv, "
                f"got {mode!r}")):
            ScalarAgentVecEnv(1, obs_mode=mode)
