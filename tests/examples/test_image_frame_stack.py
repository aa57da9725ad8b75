"""README's note on SuperSuit's image wrappers: where frame stacking puts the frames."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.envs import household_v0

ss = pytest.importorskip("supersuit")

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "view_radius": 2,
      "obs_mode": "image", "image_scale": 1}


def two_frames(wrap):
    """agent_0's stacked observation after a tick in which it moved (``wrap(env)``),
    and its first and second observations from the same seed unwrapped."""
    plain = household_v0.parallel_env(**KW)
    first, infos = plain.reset(seed=0)
    move = next(a for a in range(1, 5) if infos["agent_0"]["action_mask"][a])
    second, *_ = plain.step({"agent_0": move, "agent_1": 0})
    env = wrap(household_v0.parallel_env(**KW))
    env.reset(seed=0)
    stacked, *_ = env.step({"agent_0": move, "agent_1": 0})
    return stacked["agent_0"], first["agent_0"], second["agent_0"]


def test_frame_stack_v1_by_default_puts_image_frames_side_by_side_along_the_width():
    stacked, first, second = two_frames(lambda env: ss.frame_stack_v1(env, 2))
    assert not np.array_equal(first, second)
    planes, side, _ = first.shape
    assert stacked.shape == (planes, side, 2 * side)
    assert np.array_equal(stacked[:, :, :side], first)
    assert np.array_equal(stacked[:, :, side:], second)


def test_frame_stack_along_channels_with_stack_dim_0():
    stacked, first, second = two_frames(
        lambda env: ss.frame_stack_v1(env, 2, stack_dim=0))
    planes, side, _ = first.shape
    assert stacked.shape == (2 * planes, side, side)
    assert np.array_equal(stacked[:planes], first) and np.array_equal(stacked[planes:], second)


def test_rgb_wrappers_refuse_the_planes():
    with pytest.raises(AssertionError, match=re.escape("last dimension of size 3")):
        ss.color_reduction_v0(household_v0.parallel_env(**KW), "full").reset(seed=0)
    with pytest.raises(Exception, match=re.escape("must be 1, 3, or 4")):
        ss.resize_v1(household_v0.parallel_env(**KW), 8, 8).reset(seed=0)
