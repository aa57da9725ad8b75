"""TorchRL and Tianshou take the household as it is, no glue code: their PettingZoo
wrappers stack our infos (fixed keys, numbers and the (53,) mask) into tensors, and read
the mask from the info or, with ``action_mask_in_obs=True``, from the observation only."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs import HouseholdEnv, household_v0
from orgteams.envs.core.dynamics import EVENT_TYPES
from orgteams.envs.core.masks import action_masks

torch = pytest.importorskip("torch", reason="needs the rl extra")
pytest.importorskip("torchrl", reason="needs the rl extra")
pytest.importorskip("tianshou", reason="needs the rl extra")

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "max_ticks": 20}
COUNTS = ("tick", "is_success", *EVENT_TYPES)


class Recorded(HouseholdEnv):
    """The env as shipped, keeping what each step was given and returned (the test's
    record of what really happened; the libraries see a plain HouseholdEnv)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.steps: list[tuple[dict, dict, dict, np.ndarray]] = []

    def step(self, actions):
        out = super().step(actions)
        self.steps.append((dict(actions), out[1], out[4], action_masks(self.world)))
        return out


@pytest.mark.parametrize("in_obs", [False, True])
def test_torchrl_pettingzoo_wrapper_rolls_out_with_masks(in_obs):
    """TorchRL 0.14's PettingZooWrapper over parallel_env(obs_mode="flat"): a rollout across
    episode ends, masked random actions, every info a tensor equal to what the env said."""
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    base = Recorded(**KW, obs_mode="flat", action_mask_in_obs=in_obs)
    env = PettingZooWrapper(base, use_mask=True, seed=3)
    td = env.rollout(45, break_when_any_done=False)
    group = td["agent"]
    assert len(base.steps) == 45
    assert td["next", "done"].sum().item() == 2  # two episodes of 20 ticks ended
    actions, masks = group["action"], group["action_mask"]
    assert masks.shape == (45, 2, 53) and masks.dtype == torch.bool
    # every sampled action is valid under the mask TorchRL read from our env
    assert masks.gather(-1, actions[..., None]).all()
    nxt = td["next", "agent"]
    assert set(nxt["info"].keys()) == set(COUNTS)  # the mask went to its own key
    for t, (acts, rewards, infos, mask_after) in enumerate(base.steps):
        names = base.possible_agents
        assert actions[t].tolist() == [acts[a] for a in names]
        assert nxt["reward"][t, :, 0].tolist() == [rewards[a] for a in names]
        for key in COUNTS:
            assert nxt["info", key][t].tolist() == [float(infos[a][key]) for a in names], key
        if not td["next", "done"][t]:  # after an end TorchRL has reset: a new episode's mask
            assert np.array_equal(nxt["action_mask"][t].numpy(), mask_after.astype(bool))
    assert nxt["info", "tick"][:, 0].tolist() == [*range(1, 21), *range(1, 21), *range(1, 6)]


def test_tianshou_pettingzoo_env_collects_with_masks():
    """Tianshou 2.0's PettingZooEnv over env(action_mask_in_obs=True) and Collector.collect:
    two households, masked random agents, our infos in the replay buffer."""
    from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    def make():
        return PettingZooEnv(household_v0.env(**KW, obs_mode="flat", action_mask_in_obs=True))

    env = make()
    policy = MultiAgentPolicy({a: MARLRandomDiscreteMaskedOffPolicyAlgorithm(
        env.action_space).policy for a in env.agents})
    envs = DummyVectorEnv([make, make])
    buffer = VectorReplayBuffer(1000, 2)
    collector = Collector(policy, envs, buffer)
    collector.reset()
    np.random.seed(0)  # the random policy draws from numpy's global generator
    stats = collector.collect(n_step=120)  # 2 households x 2 agents x 30 ticks
    assert stats.n_collected_steps == 120
    assert stats.n_collected_episodes == 2 and stats.lens.tolist() == [40, 40]
    data = buffer.sample(0)[0]  # everything collected, in buffer order
    assert len(data) == 120
    mask = np.asarray(data.obs.mask)
    assert mask.shape == (120, 53)
    assert mask[np.arange(120), data.act].all()  # masked actions only
    assert set(EVENT_TYPES) | {"tick", "is_success"} <= set(data.info.keys())
    assert "action_mask" not in data.info.keys()  # with action_mask_in_obs: the obs only
    ticks = np.asarray(data.info.tick)
    assert ticks.min() == 0 and ticks.max() == 20


def test_gymnasiums_numpy_to_torch_wraps_the_agent_vector_env():
    """The module docstring of envs/vector/agents.py names NumpyToTorch among the vector
    wrappers that run on it: the rl extra brings what it imports (array-api-compat), and
    an episode's end and reset come through as tensors."""
    from gymnasium.wrappers.vector import NumpyToTorch

    env = NumpyToTorch(household_v0.agent_vector_env(2, autoreset_mode="NextStep", **KW))
    obs, infos = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (4, env.single_observation_space.shape[0])
    assert infos["action_mask"].dtype == torch.int8 and infos["action_mask"].shape == (4, 53)
    for _ in range(KW["max_ticks"]):  # waiting: every household is cut at max_ticks
        obs, rewards, terms, truncs, infos = env.step(torch.zeros(4, dtype=torch.int64))
        assert isinstance(rewards, torch.Tensor) and rewards.dtype == torch.float32
    assert truncs.all() and torch.equal(infos["episode_stats"]["l"], torch.full((4,), 20))
    obs, _, terms, truncs, infos = env.step(torch.zeros(4, dtype=torch.int64))  # the reset
    assert not (terms | truncs).any() and torch.equal(infos["tick"], torch.zeros(4))
