"""The agents-as-batch view is a real ``gymnasium.vector.VectorEnv``: Gymnasium's own
vector wrappers run on it, in both autoreset modes, and its entries are the core's."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.vector import (
    DictInfoToList,
    NormalizeReward,
    RecordEpisodeStatistics,
    TransformObservation,
)

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.vector import AgentVectorEnv

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "max_ticks": 9,
      "reward_shaping": "subgoals"}
MODES = [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP]


def masked(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One valid action per entry, drawn uniformly."""
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def test_it_is_a_vector_env_with_gymnasiums_spaces_and_metadata():
    env = household_v0.agent_vector_env(3, seed=0, **KW)
    assert isinstance(env, VectorEnv) and isinstance(env, AgentVectorEnv)
    assert env.num_envs == 6 and env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert env.single_action_space.n == NUM_ACTIONS
    assert env.action_space.shape == (6,) and env.observation_space.shape == (
        6, *env.single_observation_space.shape)
    obs, infos = env.reset()
    assert env.observation_space.contains(obs)
    assert infos["action_mask"].shape == (6, NUM_ACTIONS) and infos["_action_mask"].all()
    obs, rew, term, trunc, infos = env.step(env.action_space.sample())
    assert rew.dtype == np.float32 and rew.shape == term.shape == trunc.shape == (6,)
    assert infos["invalid_action"].shape == (6,) and infos["tick"].tolist() == [1] * 6
    nxt = household_v0.agent_vector_env(2, autoreset_mode="NextStep", **KW)
    assert nxt.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP


def test_entries_are_the_cores_households_agent_by_agent():
    core = household_v0.vector_env(3, seed=4, **KW)
    env = household_v0.agent_vector_env(3, seed=4, **KW)
    want, info = core.reset()
    got, infos = env.reset()
    np.testing.assert_array_equal(got, want.reshape(6, -1))
    rng = np.random.default_rng(1)
    for _ in range(12):  # across the end of the first episodes (tick 9)
        acts = masked(rng, infos["action_mask"])
        want, w_rew, w_term, w_trunc, info = core.step(acts.reshape(3, 2))
        got, rew, term, trunc, infos = env.step(acts)
        np.testing.assert_array_equal(got, want.reshape(6, -1))
        np.testing.assert_array_equal(rew, w_rew.reshape(6))
        np.testing.assert_array_equal(trunc, w_trunc.reshape(6))
        np.testing.assert_array_equal(infos["action_mask"], info["action_mask"].reshape(6, -1))
        np.testing.assert_array_equal(infos["tick"], np.repeat(info["tick"], 2))
        if "final_obs" in info:
            assert infos["_final_obs"].tolist() == np.repeat(info["_final_obs"], 2).tolist()
            for e in np.flatnonzero(infos["_final_obs"]):
                np.testing.assert_array_equal(infos["final_obs"][e],
                                              info["final_obs"][e // 2][e % 2])
            np.testing.assert_array_equal(infos["final_info"]["episode"]["l"],
                                          np.repeat(info["final_info"]["episode"]["l"], 2))


@pytest.mark.parametrize("mode", MODES)
def test_gymnasiums_vector_wrappers_run_on_it(mode):
    """RecordEpisodeStatistics counts the episodes as we do (return and length),
    NormalizeReward scales the rewards, DictInfoToList splits the infos per entry and
    (NEXT_STEP: Gymnasium's observation wrappers refuse SAME_STEP) TransformObservation
    maps the batch: no glue."""
    env = RecordEpisodeStatistics(household_v0.agent_vector_env(
        2, seed=7, autoreset_mode=mode, **KW))
    scale = 1.0
    if mode is AutoresetMode.NEXT_STEP:
        env, scale = TransformObservation(env, lambda o: o * 2.0), 2.0
    env = DictInfoToList(NormalizeReward(env))
    obs, infos = env.reset()
    assert obs.max() == scale and len(infos) == 4
    rng = np.random.default_rng(3)
    ends = []
    for _ in range(30):
        masks = np.stack([i["action_mask"] for i in infos])
        obs, rew, term, trunc, infos = env.step(masked(rng, masks))
        assert rew.dtype.kind == "f" and np.isfinite(rew).all()
        for i in infos:
            if "episode" in i:  # RecordEpisodeStatistics's, beside ours
                ours = i["final_info"]["episode"] if mode is AutoresetMode.SAME_STEP \
                    else i["episode_stats"]
                assert i["episode"]["l"] == ours["l"]
                assert i["episode"]["r"] == pytest.approx(ours["r"])
                ends.append(ours)
    # 2 households x 2 agents end 3 times: at steps 9, 18, 27 (NEXT_STEP: 9, 19, 29)
    assert len(ends) == 12
    assert all(e["l"] == 9 or e["is_success"] for e in ends)
    assert any(e["r"] > 0 for e in ends)  # the shaping paid something: rewards arrived
    stats = env
    while not isinstance(stats, RecordEpisodeStatistics):
        stats = stats.env
    assert stats.episode_count == len(ends)


def test_render_call_and_get_attr():
    env = household_v0.agent_vector_env(2, seed=0, render_mode="ansi", **KW)
    env.reset()
    text = env.render()
    assert len(text) == 4 and text[0] == text[1] and text[0] != text[2]
    assert isinstance(text[0], str)
    assert env.call("agent") == ("agent_0", "agent_1") * 2
    assert env.get_attr("household") == (0, 0, 1, 1)
    assert [m.shape for m in env.call("action_masks")] == [(NUM_ACTIONS,)] * 4
    assert env.get_attr("num_agents") == (2,) * 4
    state = env.call("state", 1)  # a method of the core: called once, for every entry
    assert state[0] is state[3] and state[0] == env.unwrapped.venv.state(1)
    with pytest.raises(AttributeError, match=re.escape(
            "AgentVectorEnv has no attribute 'nope' for its entries (theirs: agent, "
            "household, action_masks; or a public attribute of the vector env they "
            "share)")):
        env.call("nope")


def test_rgb_array_frames_show_each_households_world():
    pytest.importorskip("pygame")
    from orgteams.envs.render.renderer import render_frame

    env = household_v0.agent_vector_env(2, seed=0, render_mode="rgb_array", **KW)
    env.reset()
    frames = env.render()
    assert len(frames) == 4 and frames[0] is frames[1]
    np.testing.assert_array_equal(frames[2], render_frame(env.venv.state(1)))
    assert household_v0.agent_vector_env(1, **KW).render() is None


def test_reset_mask_selects_whole_households_and_bad_input_is_one_line():
    env = household_v0.agent_vector_env(2, seed=0, **KW)
    env.reset()
    env.step(np.zeros(4, np.int64))
    _, infos = env.reset(options={"reset_mask": np.array([False, False, True, True])})
    assert infos["tick"].tolist() == [1, 1, 0, 0]
    with pytest.raises(ValueError, match=re.escape(
            "options['reset_mask'] must select whole households (all 2 agents of each): "
            "the agents of a household play one episode")):
        env.reset(options={"reset_mask": np.array([True, False, False, False])})
    with pytest.raises(ValueError, match=re.escape(
            "actions must have shape (4,) (one per agent of every household), got (2, 2)")):
        env.step(np.zeros((2, 2), np.int64))
    with pytest.raises(ValueError, match=re.escape(
            "render_mode must be None or one of ('rgb_array', 'ansi'), got 'human'")):
        household_v0.agent_vector_env(2, render_mode="human")
