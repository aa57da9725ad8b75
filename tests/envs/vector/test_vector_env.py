"""The vector env's API: shapes, seeding, autoreset and errors (values: the differential test)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS


def test_shapes_dtypes_and_spaces():
    vec = household_v0.vector_env(4, layout="studio", task="put_dishwasher_easy",
                                  num_agents=3, obs_mode="flat", seed=1)
    obs, info = vec.reset()
    assert obs.shape == vec.observation_shape == (4, 3) + vec.single_observation_space.shape
    assert obs.dtype == np.float32 and vec.observation_space.contains(obs)
    assert info["action_mask"].shape == (4, 3, NUM_ACTIONS)
    assert info["action_mask"].dtype == np.int8
    obs, rew, term, trunc, info = vec.step(np.zeros((4, 3), np.int64))
    assert rew.shape == term.shape == trunc.shape == (4, 3)
    assert rew.dtype == np.float32 and term.dtype == trunc.dtype == bool  # as vector APIs want
    assert info["invalid_action"].shape == info["collision"].shape == (4, 3)
    assert info["tick"].tolist() == [1, 1, 1, 1]
    assert vec.action_space.shape == (4, 3) and vec.action_space.contains(
        np.zeros((4, 3), np.int64))


def test_image_mode_shape():
    vec = household_v0.vector_env(2, layout="studio", num_agents=2, obs_mode="image",
                                  task="put_dishwasher_easy")
    obs, _ = vec.reset(seed=0)
    assert obs.shape == (2, 2) + vec.single_observation_space.shape
    assert obs.dtype == np.uint8


def test_households_draw_the_scalar_envs_episodes():
    """Household i plays the episodes of a scalar env reset with seed + i."""
    vec = household_v0.vector_env(3, layout="apartment", num_agents=2, seed=40)
    vec.reset()
    for i in range(3):
        scalar = household_v0.parallel_env(layout="apartment", num_agents=2)
        scalar.reset(seed=40 + i)
        assert vec.state(i) == scalar.world
    vec.reset(seed=[7, 8, 9])
    scalar = household_v0.parallel_env(layout="apartment", num_agents=2)
    scalar.reset(seed=9)
    assert vec.state(2) == scalar.world
    assert vec.state(0) != vec.state(1)


def test_autoreset_same_step_keeps_the_final_observation():
    vec = household_v0.vector_env(2, layout="studio", num_agents=2, seed=3, max_ticks=2,
                                  task="put_dishwasher_easy")
    vec.reset()
    first = vec.state(0)
    obs, _, _, trunc, info = vec.step(np.zeros((2, 2), np.int64))
    assert "final_obs" not in info and not trunc.any()
    last, _, _, trunc, info = vec.step(np.zeros((2, 2), np.int64))
    assert trunc.all() and info["_final_obs"].all() and info["_final_info"].all()
    # Nobody moved: the final observation is the one before it; the returned one is the
    # next episode's first, at tick 0.
    assert info["final_obs"].dtype == object and len(info["final_obs"]) == 2
    np.testing.assert_array_equal(np.stack(info["final_obs"]), obs)
    assert info["final_info"]["episode"]["l"].tolist() == [2, 2]
    assert info["tick"].tolist() == [0, 0]
    assert vec.state(0) != first and vec.state(0).tick == 0


NEXT = {"layout": "studio", "num_agents": 2, "task": "put_dishwasher_easy", "max_ticks": 7}


def test_autoreset_next_step_ends_then_resets_on_the_following_step():
    """Gymnasium's NEXT_STEP beside SAME_STEP on the same actions: the ending step returns
    the last observation (SAME_STEP's final_obs) and its statistics; the next one ignores
    the actions and returns SAME_STEP's new first observation, reward 0, no flags."""
    same = household_v0.vector_env(3, seed=5, **NEXT)
    nxt = household_v0.vector_env(3, seed=5, autoreset_mode="NextStep", **NEXT)
    assert nxt.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert same.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    np.testing.assert_array_equal(same.reset()[0], nxt.reset()[0])
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(20):
        acts = rng.integers(0, NUM_ACTIONS, size=(3, 2))
        o1, r1, te1, tr1, i1 = same.step(acts)
        o2, r2, te2, tr2, i2 = nxt.step(acts)
        np.testing.assert_array_equal(r1, r2)
        assert (te1 == te2).all() and (tr1 == tr2).all()
        if "final_obs" not in i1:
            np.testing.assert_array_equal(o1, o2)
            assert "episode_stats" not in i2
            continue
        ends += 1  # every household ends at tick 7 (no success in 7 random ticks)
        assert i1["_final_obs"].all() and i2["_episode_stats"].all() and tr2.all()
        np.testing.assert_array_equal(np.stack(i1["final_obs"]), o2)
        assert i2["tick"].tolist() == [7, 7, 7] and i1["tick"].tolist() == [0, 0, 0]
        for key, value in i1["final_info"]["episode"].items():
            np.testing.assert_array_equal(i2["episode_stats"][key], value)
        o3, r3, te3, tr3, i3 = nxt.step(rng.integers(0, NUM_ACTIONS, size=(3, 2)))
        np.testing.assert_array_equal(o3, o1)  # the new episodes' first observations
        assert not (r3.any() or te3.any() or tr3.any() or i3["invalid_action"].any())
        assert i3["tick"].tolist() == [0, 0, 0] and "episode_stats" not in i3
        for i in range(3):
            assert nxt.state(i) == same.state(i)
    assert ends == 2


def test_next_step_resets_only_the_households_that_ended():
    """reset_mask restarts household 0 mid-episode, so household 1 ends first; its new
    episode is the scalar env's next one, and household 0 plays on untouched."""
    vec = household_v0.vector_env(2, seed=9, autoreset_mode=AutoresetMode.NEXT_STEP, **NEXT)
    vec.reset()
    waits = np.zeros((2, 2), np.int64)
    for _ in range(3):
        vec.step(waits)
    obs, info = vec.reset(options={"reset_mask": np.array([True, False])})
    assert info["tick"].tolist() == [0, 3]
    scalar = household_v0.parallel_env(**NEXT)
    scalar.reset(seed=9)
    scalar.reset()
    assert vec.state(0) == scalar.world  # household 0's generator drew its next episode
    for _ in range(4):
        _, _, _, trunc, info = vec.step(waits)
    assert trunc[:, 0].tolist() == [False, True] and info["_episode_stats"].tolist() == [
        False, True]
    assert info["episode_stats"]["l"].tolist() == [0, 7]
    _, rew, _, trunc, info = vec.step(waits)
    assert info["tick"].tolist() == [5, 0] and not trunc.any() and not rew.any()
    other = household_v0.parallel_env(**NEXT)
    other.reset(seed=10)
    other.reset()
    assert vec.state(1) == other.world


def test_reset_mask_reseeds_only_the_masked_households():
    vec = household_v0.vector_env(3, layout="apartment", num_agents=2, seed=0)
    vec.reset()
    before = [vec.state(i) for i in range(3)]
    vec.reset(seed=50, options={"reset_mask": np.array([False, True, False])})
    scalar = household_v0.parallel_env(layout="apartment", num_agents=2)
    scalar.reset(seed=51)
    assert vec.state(1) == scalar.world
    assert vec.state(0) == before[0] and vec.state(2) == before[2]


def test_bad_actions_are_refused_in_one_line():
    vec = household_v0.vector_env(2, layout="studio", num_agents=2, seed=0)
    with pytest.raises(RuntimeError, match=re.escape("call reset() before step()")):
        vec.step(np.zeros((2, 2), np.int64))
    vec.reset()
    with pytest.raises(ValueError, match=re.escape(
            "actions must have shape (2, 2) (num_envs, num_agents), got (2,)")):
        vec.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match=re.escape(
            "env 1, agent 0: action 53 is outside the action space Discrete(53)")):
        vec.step(np.array([[0, 0], [53, 0]]))
    with pytest.raises(ValueError, match=re.escape(
            "actions must be integers in Discrete(53), got dtype float64")):
        vec.step(np.zeros((2, 2)))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match=re.escape(
            "obs_mode must be one of ('flat', 'image') for the vector env, got 'text'")):
        household_v0.vector_env(2, obs_mode="text")
    with pytest.raises(ValueError, match=re.escape(
            "num_envs must be a positive integer, got 0")):
        household_v0.vector_env(0)
    vec = household_v0.vector_env(2, layout="studio")
    with pytest.raises(ValueError, match=re.escape(
            "seed must be an int or 2 seeds (one per household), got 3")):
        vec.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match=re.escape(
            "unknown reset options ['state']; the vector env takes 'reset_mask'")):
        vec.reset(options={"state": None})
    with pytest.raises(RuntimeError, match=re.escape(
            "call reset() without a reset_mask first (every household needs a first "
            "episode)")):
        vec.reset(options={"reset_mask": np.ones(2, bool)})
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape(
            "options['reset_mask'] must be a bool array of shape (2,), got int64 (2,)")):
        vec.reset(options={"reset_mask": np.ones(2, np.int64)})
    with pytest.raises(ValueError, match=re.escape(
            "autoreset_mode must be one of ['SameStep', 'NextStep'], got 'Disabled'")):
        household_v0.vector_env(2, autoreset_mode="Disabled")
    with pytest.raises(ValueError, match=re.escape("Unknown layout 'studi'.")):
        household_v0.vector_env(2, layout="studi")
    with pytest.raises(ValueError, match=re.escape(
            "backend must be one of ('numpy', 'jax'), got 'torch'")):
        household_v0.vector_env(2, backend="torch")
    with pytest.raises(ValueError, match=re.escape(  # the scalar env's checks, first
            "view_radius must be from 1 to 512, got 3000")):
        household_v0.vector_env(2, view_radius=3000)
    with pytest.raises(ValueError, match=re.escape(
            "max_ticks must be an integer from 0 to 1000000, got '10'")):
        household_v0.vector_env(2, max_ticks="10")


def test_raw_uint8_observations_are_refused_with_the_jax_backend():
    pytest.importorskip("jax", reason="needs the jax extra")
    with pytest.raises(ValueError, match=re.escape(
            "obs_dtype=np.uint8 is for obs_mode='flat' with the numpy backend, got "
            "obs_mode='flat', backend='jax'")):
        household_v0.vector_env(2, backend="jax", obs_dtype=np.uint8)


def test_copy_false_reuses_one_array_with_the_same_values():
    kwargs = dict(layout="studio", num_agents=2, seed=5, task="put_dishwasher_easy")
    fresh = household_v0.vector_env(3, **kwargs)
    reused = household_v0.vector_env(3, copy=False, **kwargs)
    fresh.reset()
    reused.reset()
    rng = np.random.default_rng(0)
    first = earlier = None
    for _ in range(20):
        acts = rng.integers(0, NUM_ACTIONS, size=(3, 2))
        want = fresh.step(acts)[0]
        got = reused.step(acts)[0]
        np.testing.assert_array_equal(got, want)
        first = got if first is None else first
        assert np.shares_memory(got, first)  # one array, overwritten each step
        assert not got.flags.writeable  # the next step updates only what changed
        assert earlier is None or not np.shares_memory(want, earlier)  # copy=True: new ones
        earlier = want


def test_observations_off_returns_none_and_keeps_masks():
    vec = household_v0.vector_env(2, layout="studio", num_agents=2, observations=False)
    obs, info = vec.reset(seed=0)
    assert obs is None and info["action_mask"].shape == (2, 2, NUM_ACTIONS)
    obs, rew, *_ = vec.step(np.zeros((2, 2), np.int64))
    assert obs is None and rew.shape == (2, 2)


def test_uint8_observations_are_the_raw_plane_values():
    kwargs = dict(layout="studio", num_agents=2, seed=3, task="put_dishwasher_easy")
    floats = household_v0.vector_env(2, **kwargs)
    raw = household_v0.vector_env(2, obs_dtype=np.uint8, **kwargs)
    box = raw.single_observation_space
    assert box.dtype == np.uint8 and box.shape == floats.single_observation_space.shape
    scale = np.rint(1 / floats._template._flat_inverse)
    np.testing.assert_array_equal(box.high, scale)
    assert box.high.max() > 1  # counts keep their range
    want, _ = floats.reset()
    got, _ = raw.reset()
    rng = np.random.default_rng(1)
    for _ in range(10):
        assert got.dtype == np.uint8 and box.contains(got[0, 0])
        np.testing.assert_array_equal(got.astype(np.float32) / scale, want)
        acts = rng.integers(0, NUM_ACTIONS, size=(2, 2))
        want, got = floats.step(acts)[0], raw.step(acts)[0]


def test_obs_dtype_is_checked():
    with pytest.raises(ValueError, match=re.escape(
            "obs_dtype must be np.float32 or np.uint8, got 'float16'")):
        household_v0.vector_env(2, obs_dtype="float16")
    with pytest.raises(ValueError, match=re.escape(
            "obs_dtype=np.uint8 is for obs_mode='flat' with the numpy backend, got "
            "obs_mode='image', backend='numpy'")):
        household_v0.vector_env(2, obs_mode="image", obs_dtype=np.uint8)
