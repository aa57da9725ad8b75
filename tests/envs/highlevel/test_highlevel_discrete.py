"""HighLevelEnv for RL: Discrete option slots, masks from `available`, per-slot features."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from gymnasium import spaces

from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.highlevel.slots import SLOT_FEATURES

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2}


def masked_choice(rng, infos):
    return {a: int(rng.choice(np.flatnonzero(i["action_mask"]))) for a, i in infos.items()}


def test_slots_are_stable_and_masks_are_the_available_actions():
    env = HighLevelEnv(action_mode="discrete", **KW)
    space = env.action_space("agent_0")
    assert isinstance(space, spaces.Discrete) and space is env.action_space("agent_1")
    rng = np.random.default_rng(0)
    for seed in range(3):
        _, infos = env.reset(seed=seed)
        assert env.action_space("agent_0").n == space.n  # same slots every episode
        for _ in range(15):
            if not env.agents:
                break
            for info in infos.values():
                ids = {x.id for x in info["available"]}
                on = {env._slot_ids[s] for s in np.flatnonzero(info["action_mask"])}
                assert on == ids - {x for x in ids if x.startswith("primitive:")}
                assert info["action_mask"].dtype == np.int8
            _, _, _, _, infos = env.step(masked_choice(rng, infos))
            assert all(i["ticks_elapsed"] >= 1 for i in infos.values())


def test_a_slot_runs_its_action():
    env = HighLevelEnv(action_mode="discrete", **KW)
    _, infos = env.reset(seed=1)
    slot = env._slot_ids.index("explore:kitchen")
    _, _, _, _, infos = env.step({"agent_0": slot, "agent_1": np.int64(slot)})
    assert env._runners["agent_0"].action.id == "explore:kitchen"
    assert infos["agent_0"]["status"] in ("running", "done")
    # Text ids still work in discrete mode (primitive:<id> for a player at the keyboard).
    env.step({"agent_0": "primitive:0"})


def test_unavailable_or_bad_slots_are_one_clear_error():
    env = HighLevelEnv(action_mode="discrete", **KW)
    _, infos = env.reset(seed=2)
    off = int(np.flatnonzero(infos["agent_0"]["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match=re.escape(
            f"agent_0: unknown or unavailable action {env._slot_ids[off]!r}")):
        env.step({"agent_0": off})
    n = env.slots.n
    with pytest.raises(ValueError, match=re.escape(
            f"agent_0: option slot {n} is outside Discrete({n})")):
        env.step({"agent_0": n})
    text = HighLevelEnv(**KW)
    text.reset(seed=2)
    with pytest.raises(ValueError, match=re.escape(
            "agent_0: integer action 3 needs HighLevelEnv(action_mode='discrete')")):
        text.step({"agent_0": 3})
    with pytest.raises(ValueError, match=re.escape(
            "action_mode must be one of ('text', 'discrete'), got 'slots'")):
        HighLevelEnv(action_mode="slots", **KW)
    with pytest.raises(ValueError, match=re.escape(
            "HighLevelEnv observes 'text' or 'array' (per-slot features), got "
            "obs_mode='flat'")):
        HighLevelEnv(obs_mode="flat", **KW)


def test_array_observations_are_per_slot_features():
    env = HighLevelEnv(action_mode="discrete", obs_mode="array", **KW)
    space = env.observation_space("agent_0")
    assert space["slots"].shape == (env.slots.n, SLOT_FEATURES)
    obs, infos = env.reset(seed=4)
    rng = np.random.default_rng(4)
    useful_grab = False
    for _ in range(12):
        if not env.agents:
            break
        for a in env.agents:
            assert space.contains(obs[a])
            assert np.array_equal(obs[a]["slots"][:, 0], infos[a]["action_mask"])
            running = infos[a]["current"]
            marked = np.flatnonzero(obs[a]["slots"][:, 1])
            assert [env._slot_ids[s] for s in marked] == ([running.id] if running else [])
            goal_classes = {p.cls for p in env.base.world.scene.goal}
            for s, ident in enumerate(env._slot_ids):
                if ident and ident.startswith("grab:"):
                    wanted = ident[5:].rpartition("_")[0] in goal_classes
                    useful_grab |= bool(wanted and obs[a]["slots"][s, 2])
        obs, _, _, _, infos = env.step(masked_choice(rng, infos))
    assert useful_grab


def test_text_mode_keeps_text_observations_and_ids():
    env = HighLevelEnv(**KW)
    obs, infos = env.reset(seed=0)
    assert isinstance(obs["agent_0"], str) and "action_mask" not in infos["agent_0"]
    assert isinstance(env.observation_space("agent_0"), spaces.Text)


def test_discrete_env_pickles_mid_episode():
    env = HighLevelEnv(action_mode="discrete", obs_mode="array", **KW)
    _, infos = env.reset(seed=6)
    rng = np.random.default_rng(6)
    _, _, _, _, infos = env.step(masked_choice(rng, infos))
    copy = pickle.loads(pickle.dumps(env))
    acts = masked_choice(rng, infos)
    a = env.step(acts)
    b = copy.step(acts)
    assert all(np.array_equal(a[0][x]["slots"], b[0][x]["slots"]) for x in a[0])
    assert a[1] == b[1] and env.base.world == copy.base.world
