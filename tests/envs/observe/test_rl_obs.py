"""RL observation modes (flat, image), the global state, curriculum knobs, episode infos."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from orgteams.envs import household_v0
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.rewards import SUBGOAL_BONUS
from orgteams.envs.observe.rl_obs import MAX_COUNT, flat_scale, num_planes

EASY = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2}


def rollout(env, seed: int, ticks: int):
    """Masked-random play; yields (obs, infos) after reset and each step."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    yield obs, infos
    for _ in range(ticks):
        if not env.agents:
            obs, infos = env.reset()
        acts = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in env.agents}
        obs, _, _, _, infos = env.step(acts)
        yield obs, infos


@pytest.mark.parametrize("mode", ["flat", "image"])
def test_rl_observations_stay_inside_their_tight_spaces(mode):
    env = household_v0.parallel_env(**EASY, obs_mode=mode, full_observability=True)
    space = env.observation_space("agent_0")
    seen_max = np.zeros(space.shape, space.dtype)
    for obs, _ in rollout(env, seed=1, ticks=150):
        for o in obs.values():
            assert space.contains(o), mode
            np.maximum(seen_max, o, out=seen_max)
    if mode == "flat":
        assert space.dtype == np.float32
        assert (space.low == 0).all() and (space.high == 1).all()
        raw = seen_max * flat_scale(household_v0.parallel_env().view_radius, 3)
        assert np.allclose(raw, np.round(raw))  # counts / their most, one-hot 0 or 1
        assert seen_max.max() == 1
    else:
        assert space.shape[0] == num_planes() < space.shape[1] == space.shape[2]
        assert space.shape[1] >= 36
        assert set(np.unique(seen_max)) <= {0, 255} | {31 * c for c in range(MAX_COUNT + 1)}


def test_flat_and_image_encode_the_array_observation():
    kw = dict(EASY, full_observability=True)
    arr = household_v0.parallel_env(**kw)
    flat = household_v0.parallel_env(**kw, obs_mode="flat")
    image = household_v0.parallel_env(**kw, obs_mode="image", image_scale=1)
    a, _ = arr.reset(seed=2)
    f, _ = flat.reset(seed=2)
    im, _ = image.reset(seed=2)
    o, cat = a["agent_0"], load_catalog()
    side = o["image"].shape[0]
    raw = np.round(f["agent_0"] * flat_scale(7, 3)).astype(np.uint8)
    planes = raw[:side * side * num_planes()].reshape(side, side, num_planes())
    # Tile one-hot agrees with the tile channel (0 = unseen: no plane set).
    tiles = o["image"][..., 0]
    assert np.array_equal(planes[..., :7].argmax(-1) + 1, np.where(tiles > 0, tiles, 1))
    assert np.array_equal(planes[..., :7].sum(-1), (tiles > 0).astype(np.uint8))
    # Self at the centre; furniture types one-hot; objects counted.
    assert planes[side // 2, side // 2, 7] == 1
    ftype = o["image"][..., 3]
    assert np.array_equal(planes[..., 9:9 + len(cat.furniture)].argmax(-1)[ftype > 0],
                          ftype[ftype > 0] - 1)
    assert np.array_equal(planes[..., 9 + len(cat.furniture)], o["image"][..., 4:].sum(-1))
    # The goal row's target plane marks the dishwasher.
    cls, target, missing = o["goal"][0]
    assert missing >= 1
    assert np.array_equal(planes[..., -10 + 1], (ftype == target).astype(np.uint8))
    assert np.array_equal(planes[..., -10], o["image"][..., 4 + cls - 1])
    # The image is the same planes, channels first, binary as 255, counts as 31 each.
    factor = np.full(num_planes(), 255)
    factor[[27, 28, 30, 32, 34, 36]] = 31  # the count planes
    assert np.array_equal(im["agent_0"].transpose(1, 2, 0), planes * factor)


def test_state_is_global_fixed_and_inside_its_space():
    env = household_v0.parallel_env(**EASY, obs_mode="flat")
    space = env.state_space
    with pytest.raises(RuntimeError, match="call reset\\(\\) before state\\(\\)"):
        env.state()
    states = []
    for _, _ in rollout(env, seed=3, ticks=60):
        s = env.state()
        assert space.contains(s)
        states.append(s)
    assert any(not np.array_equal(states[0], s) for s in states[1:])
    # Hidden contents count: every object of the episode is in the state, in a hand or not.
    k = len(load_catalog().object_classes)
    per_cell = 7 + len(load_catalog().furniture) + k + 2
    h, w = env.layout.height, env.layout.width
    grid = states[-1][:h * w * per_cell].reshape(h * w, per_cell)
    held = states[-1][h * w * per_cell:h * w * per_cell + 2 * 2 * k]
    assert grid[:, 25:25 + k].sum() + held.sum() == len(env.world.scene.objects)
    assert grid[:, -2:].sum() == 2  # each agent on one cell


def test_units_knob_sets_the_goal_size():
    for units in (1, 2, (1, 2)):
        env = household_v0.parallel_env(**EASY, units=units)
        for seed in range(6):
            env.reset(seed=seed)
            total = sum(p.count for p in env.world.scene.goal)
            lo, hi = (units, units) if isinstance(units, int) else units
            assert lo <= total <= hi


def test_subgoal_shaping_pays_the_right_container_and_goal_objects_once():
    env = household_v0.parallel_env(layout="studio", task="put_dishwasher_easy",
                                    num_agents=1, units=1, reward_shaping="subgoals",
                                    max_ticks=10_000)
    plain = household_v0.parallel_env(layout="studio", task="put_dishwasher_easy",
                                      num_agents=1, units=1, reward_shaping="units",
                                      max_ticks=10_000)
    bonus_total, paid = 0.0, []
    for seed in range(4):
        env.reset(seed=seed)
        plain.reset(seed=seed)
        rng = np.random.default_rng(seed)
        infos = {"agent_0": {"action_mask": np.ones(53)}}
        _, infos = env.reset(seed=seed)
        for _ in range(400):
            act = int(rng.choice(np.flatnonzero(infos["agent_0"]["action_mask"])))
            _, r, _, _, infos = env.step({"agent_0": act})
            _, r2, _, _, _ = plain.step({"agent_0": act})
            extra = r["agent_0"] - r2["agent_0"]
            if extra:
                types = {k for k in ("opened", "picked", "placed") if infos["agent_0"][k]}
                assert types & {"opened", "picked"}, types
                paid.append(round(extra, 6))
            bonus_total += extra
            if not env.agents:
                break
    assert paid and set(paid) == {round(SUBGOAL_BONUS, 6)}  # one unit: bonus / 1
    assert bonus_total < 10 * SUBGOAL_BONUS  # once per container / object per episode


def test_episode_end_carries_success_and_statistics():
    env = household_v0.parallel_env(**EASY, max_ticks=30, rich_infos=True)
    infos = [i for _, i in rollout(env, seed=4, ticks=30)]
    assert not env.agents
    info = infos[-1]["agent_0"]
    assert info["is_success"] is False
    ep = info["episode"]
    assert ep["l"] == 30 and ep["units_total"] == 3 and not ep["is_success"]
    assert ep["invalid_actions"] == 0  # masked play: nothing invalid when played alone
    assert set(ep) == {"r", "l", "is_success", "units_done", "units_total", "invalid_actions",
                       "collisions"}
    assert env.episode_statistics() == ep
    assert all("episode" not in i["agent_0"] for i in infos[:-1])


INFO_KEYS = {"tick", "is_success", "picked", "placed", "opened", "closed", "subgoal_done",
             "subgoal_undone", "collision", "invalid_action", "action_mask"}


def test_default_infos_have_fixed_keys_and_shapes_every_tick():
    """What tensor libraries stack: the same keys at reset, every step and the episode's
    end, each a number or the (53,) mask; the statistics come from a method."""
    env = household_v0.parallel_env(**EASY, max_ticks=30, obs_mode="flat")
    infos = [i for _, i in rollout(env, seed=4, ticks=30)]
    assert len(infos) == 31 and not env.agents
    for step in infos:
        for info in step.values():
            assert set(info) == INFO_KEYS
            assert all(np.shape(v) == () for k, v in info.items() if k != "action_mask")
            assert info["action_mask"].shape == (53,)
    assert infos[-1]["agent_0"]["tick"] == 30
    stats = env.episode_statistics()
    assert stats["l"] == 30 and stats["units_total"] == 3 and stats["invalid_actions"] == 0


def test_env_pickles_after_render_and_mid_episode():
    env = household_v0.parallel_env(**EASY, render_mode="rgb_array", obs_mode="flat")
    env.reset(seed=5)
    env.step({"agent_0": 1, "agent_1": 2})
    frame = env.render()
    copy = pickle.loads(pickle.dumps(env))
    assert copy.world == env.world
    acts = {"agent_0": 3, "agent_1": 4}
    o1 = env.step(acts)[0]
    o2 = copy.step(acts)[0]
    assert all(np.array_equal(o1[a], o2[a]) for a in o1)
    assert np.array_equal(copy.render(), env.render()) and frame.shape == env.render().shape
    env.close()
    copy.close()
