"""household_v0.single_agent_env: one agent as a gymnasium.Env, its teammates given
(random, waiting, a frozen policy callable, per agent); Gymnasium's and SB3's
check_env pass. Planner and LLM teammates under organizations: tests/orgteams/play."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from orgteams.envs import household_v0
from orgteams.envs.core.masks import action_masks
from orgteams.envs.household import EVENT_COUNTS

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 3, "max_ticks": 25}
INFO_KEYS = {"tick", "is_success", *EVENT_COUNTS, "action_mask"}


def play(env, seed: int, policy=None) -> list[tuple]:
    """One episode with masked first-valid actions (or ``policy``); the trace."""
    obs, info = env.reset(seed=seed)
    trace = [(obs, info)]
    while True:
        mask = env.action_masks()
        action = int(np.flatnonzero(mask)[-1]) if policy is None else policy(obs, mask)
        obs, rew, term, trunc, info = env.step(action)
        trace.append((obs, rew, term, trunc, info))
        if term or trunc:
            return trace


@pytest.mark.parametrize("obs_mode", ["flat", "image", "array"])
def test_gymnasium_check_env_passes(obs_mode):
    env = household_v0.single_agent_env("agent_1", "random", obs_mode=obs_mode, **KW)
    check_env(env, skip_render_check=True)


def test_the_learner_acts_and_random_teammates_replay_with_the_seed():
    env = household_v0.single_agent_env("agent_2", "random", **KW)
    first, second = play(env, 5), play(env, 5)
    assert len(first) == 26 and first[-1][3] is True  # truncated at tick 25
    for a, b in zip(first, second):  # same seed: the teammates' draws too
        np.testing.assert_array_equal(a[0], b[0])
    world = env.base.world
    assert env.observation_space.contains(first[-1][0])
    info = first[-1][-1]
    assert set(info) == INFO_KEYS and info["tick"] == 25
    # the learner's mask is the household's for agent_2, of the last world
    np.testing.assert_array_equal(info["action_mask"], action_masks(world)[2])
    assert env.episode_statistics()["l"] == 25
    other = play(env, 6)
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, other))


def first_move(mask: np.ndarray) -> int:
    """The first open move (1-4), else wait."""
    moves = np.flatnonzero(mask[1:5])
    return int(1 + moves[0]) if len(moves) else 0


def test_a_callable_teammate_sees_its_own_observation_and_mask():
    """A frozen-policy teammate is asked each tick with its own observation and mask
    (the scalar env's for that agent), and what it returns is what its agent did."""
    calls = []

    def teammate(obs, mask):
        calls.append((obs, mask))
        return first_move(mask)

    env = household_v0.single_agent_env("agent_0", {"agent_1": "wait", "agent_2": teammate},
                                        **KW)
    env.reset(seed=2)
    start = list(env.base.world.agent_pos)
    twin = household_v0.parallel_env(obs_mode="flat", **KW)
    twin_obs, twin_info = twin.reset(seed=2)
    for _ in range(6):
        env.step(0)
        obs, mask = calls[-1]
        np.testing.assert_array_equal(obs, twin_obs["agent_2"])
        np.testing.assert_array_equal(mask, twin_info["agent_2"]["action_mask"])
        twin_obs, _, _, _, twin_info = twin.step(
            {"agent_0": 0, "agent_1": 0, "agent_2": first_move(mask)})
        assert env.base.world == twin.world
    assert len(calls) == 6
    world = env.base.world
    assert world.agent_pos[1] == start[1] and world.agent_pos[2] != start[2]


def test_action_mask_in_obs_puts_the_learners_mask_in_the_observation_only():
    env = household_v0.single_agent_env("agent_1", "wait", action_mask_in_obs=True, **KW)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"} and "action_mask" not in info
    np.testing.assert_array_equal(obs["action_mask"], env.action_masks())
    check_env(env, skip_render_check=True)


def test_bad_teammates_are_one_line():
    with pytest.raises(ValueError, match=re.escape(
            "teammate agent_1: 'planner' is not a per-tick policy (random, wait); for "
            "planners or LLM members pass orgteams.play.teammates.make_teammates('planner', "
            "organization=...)")):
        household_v0.single_agent_env("agent_0", "planner", **KW)
    with pytest.raises(ValueError, match=re.escape(
            "teammates names ['agent_0'], which are not teammates; they are "
            "['agent_1', 'agent_2']")):
        household_v0.single_agent_env("agent_0", {"agent_0": "wait"}, **KW)
    with pytest.raises(ValueError, match=re.escape("teammates gives no policy for ['agent_2']")):
        household_v0.single_agent_env("agent_0", {"agent_1": "wait"}, **KW)
    with pytest.raises(ValueError, match=re.escape(
            "agent 'agent_7' is not one of ['agent_0', 'agent_1', 'agent_2']")):
        household_v0.single_agent_env("agent_7", **KW)
    env = household_v0.single_agent_env("agent_0", lambda o, m: 99, **KW)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape(
            "agent_1: action 99 is outside the action space Discrete(53)")):
        env.step(0)


def test_sb3_check_env_passes():
    pytest.importorskip("stable_baselines3", reason="needs the rl extra")
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    sb3_check_env(household_v0.single_agent_env("agent_1", "random", **KW))
