"""The PettingZoo contract: conformance tests, seeding, rewards, termination, errors."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

from orgteams.envs import HouseholdEnv, household_v0, list_layouts
from orgteams.envs.core.actions import NUM_ACTIONS, Verb, encode
from orgteams.envs.core.dynamics import EVENT_TYPES
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.core.tasks import load_task, task_from_dict
from orgteams.envs.highlevel import HighLevelEnv

LAYOUTS = list_layouts()
S = 2  # south


def small_task(units: int = 1):
    return task_from_dict({"name": "apple_on_table", "description": "one class, one target",
                           "candidates": ["ON(apple, kitchen_table)"], "units": [units, units],
                           "max_per_predicate": units, "extra_objects": 0, "distractors": 0})


def one_put_from(env: HouseholdEnv, held: int) -> None:
    """Reach in: agent 0 stands north of the kitchen table holding ``held`` apples."""
    data = env.world.to_dict()
    data["contents"] = [[] for _ in data["contents"]]
    data["hands"] = [list(range(held))] + [[] for _ in data["hands"][1:]]
    data["agent_pos"][0] = [2, 3]
    env.world = HouseholdState.from_dict(data, scene=env.world.scene)


# ---- conformance ----

@pytest.mark.parametrize("obs_mode", ["array", "text"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_parallel_api(layout, obs_mode):
    parallel_api_test(household_v0.parallel_env(layout=layout, obs_mode=obs_mode),
                      num_cycles=100)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_aec_api(layout):
    api_test(household_v0.env(layout=layout), num_cycles=60)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("obs_mode", ["flat", "image"])
def test_aec_api_of_the_rl_modes(obs_mode):
    api_test(household_v0.env(layout="studio", obs_mode=obs_mode), num_cycles=60)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_aec_api_cannot_pass_text_observations():
    """The limit docs/household.md states: PettingZoo's AEC api_test compares each
    observation's ``.dtype`` with its space's. A ``Text`` space's dtype is numpy's
    unsized ``'<U'``; a ``str`` has no ``.dtype`` and a numpy string a sized one, so no
    non-empty text observation can pass it, whatever the env does. The parallel tests
    have no such check and pass (test_parallel_api, test_seeding)."""
    env = household_v0.env(layout="studio", obs_mode="text")
    with pytest.raises(AttributeError, match=re.escape("'str' object has no attribute 'dtype'")):
        api_test(env, num_cycles=60)
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    space = env.observation_space(env.agent_selection)
    assert type(obs) is str and space.contains(obs)
    assert space.dtype == np.dtype("<U")
    assert np.str_(obs).dtype == np.dtype(f"<U{len(obs)}") != space.dtype


@pytest.mark.parametrize("obs_mode", ["array", "text"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_seeding(layout, obs_mode):
    parallel_seed_test(functools.partial(household_v0.parallel_env, layout=layout,
                                         obs_mode=obs_mode), num_cycles=60)
    seed_test(functools.partial(household_v0.env, layout=layout, obs_mode=obs_mode),
              num_cycles=60)


def _rollout(layout: str, obs_mode: str, ticks: int = 200):
    env = household_v0.parallel_env(layout=layout, obs_mode=obs_mode, num_agents=3,
                                     max_ticks=10_000, rich_infos=True)
    rng = np.random.default_rng(123)
    obs, infos = env.reset(seed=42)
    trace = [(obs, infos)]
    for _ in range(ticks):
        actions = {a: int(rng.integers(NUM_ACTIONS)) for a in env.agents}
        trace.append(env.step(actions))
        if not env.agents:
            break
    return trace


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("obs_mode", ["array", "text"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_same_seed_same_episode(layout, obs_mode):
    first, second = _rollout(layout, obs_mode), _rollout(layout, obs_mode)
    assert len(first) == 201
    assert _same(first, second)
    events = [e for _, _, _, _, infos in first[1:] for i in infos.values() for e in i["events"]]
    assert events, "random actions should cause at least some events"


def test_different_seeds_differ():
    env = household_v0.parallel_env(layout="apartment")
    a = env.reset(seed=1)[0]
    b = env.reset(seed=2)[0]
    assert not _same(a, b)


# ---- spaces and metadata ----

@pytest.mark.parametrize("obs_mode", ["array", "text"])
def test_spaces_are_cached(obs_mode):
    env = household_v0.parallel_env(obs_mode=obs_mode, num_agents=2)
    for agent in env.possible_agents:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)
        assert env.action_space(agent).n == NUM_ACTIONS


def test_metadata_and_agents():
    env = household_v0.parallel_env(num_agents=4)
    assert env.metadata["name"] == "household_v0"
    assert env.metadata["is_parallelizable"] is True
    assert set(env.metadata["render_modes"]) == {"human", "rgb_array", "ansi"}
    assert env.possible_agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert env.agents == []
    env.reset(seed=0)
    assert env.agents == env.possible_agents
    assert household_v0.raw_env is HouseholdEnv


def test_docstring_headings():
    doc = household_v0.__doc__
    for heading in ("Description", "Action Space", "Observation Encoding", "Rewards",
                    "Termination", "Infos", "Layouts and Tasks"):
        assert re.search(rf"^{heading}$", doc, re.MULTILINE), heading
    for name in LAYOUTS:
        assert f"``{name}``" in doc


# ---- rewards, termination, truncation ----

def test_termination_on_success(two_rooms):
    env = HouseholdEnv(layout=two_rooms, task=small_task(1), num_agents=2)
    env.reset(seed=0)
    one_put_from(env, held=1)
    obs, rew, term, trunc, infos = env.step({"agent_0": encode(Verb.PUT, S, 0),
                                             "agent_1": 0})
    assert rew == {"agent_0": 1.0, "agent_1": 1.0}
    assert term == {"agent_0": True, "agent_1": True}
    assert trunc == {"agent_0": False, "agent_1": False}
    # the default infos count the events: agent_0 placed, the team's subgoal for both
    counts = {a: {k: v for k, v in i.items() if k in EVENT_TYPES and v} for a, i in infos.items()}
    assert counts == {"agent_0": {"placed": 1, "subgoal_done": 1},
                      "agent_1": {"subgoal_done": 1}}
    assert "events" not in infos["agent_0"] and "episode" not in infos["agent_0"]
    assert env.episode_statistics()["is_success"] is True
    assert env.agents == []
    assert env.world.success
    assert env.progress()["units_done"] == env.progress()["units_total"] == 1
    with pytest.raises(RuntimeError, match=re.escape(
            "the episode is over; call reset() to start a new one")):
        env.step({})


def test_rich_infos_list_the_events_and_end_with_the_statistics(two_rooms):
    env = HouseholdEnv(layout=two_rooms, task=small_task(1), num_agents=2, rich_infos=True)
    _, infos = env.reset(seed=0)
    assert infos["agent_0"]["events"] == [] and "episode" not in infos["agent_0"]
    one_put_from(env, held=1)
    *_, infos = env.step({"agent_0": encode(Verb.PUT, S, 0), "agent_1": 0})
    assert [e["type"] for e in infos["agent_0"]["events"]] == ["placed", "subgoal_done"]
    assert [e["type"] for e in infos["agent_1"]["events"]] == ["subgoal_done"]
    assert infos["agent_0"]["placed"] == 1  # the counts are there too
    episode = infos["agent_1"]["episode"]
    assert episode == env.episode_statistics()
    assert episode["is_success"] is True and episode["units_done"] == 1


def test_pettingzoo_max_cycles_test_passes():
    """``max_cycles``, PettingZoo's name for the tick limit, as its own test uses it."""
    from pettingzoo.test import max_cycles_test

    max_cycles_test(household_v0)
    env = household_v0.parallel_env(layout="studio", max_cycles=7)
    assert env.max_ticks == 7
    assert household_v0.parallel_env(max_cycles=5, max_ticks=5).max_ticks == 5


def test_max_cycles_and_a_different_max_ticks_are_refused():
    with pytest.raises(ValueError, match=re.escape(
            "max_cycles=4 and max_ticks=9 name the same tick limit; give one of them")):
        household_v0.parallel_env(max_cycles=4, max_ticks=9)


@pytest.mark.parametrize("shaping, rewards", [(False, [0.0, 1.0, 0.0]),
                                              (True, [0.5, 1.5, None])])
def test_reward_shaping(two_rooms, shaping, rewards):
    env = HouseholdEnv(layout=two_rooms, task=small_task(2), num_agents=1,
                       reward_shaping=shaping)
    env.reset(seed=0)
    one_put_from(env, held=2)
    put = {"agent_0": encode(Verb.PUT, S, 0)}
    _, rew, term, _, _ = env.step(put)
    assert rew == {"agent_0": rewards[0]} and term == {"agent_0": False}
    _, rew, term, _, _ = env.step(put)
    assert rew == {"agent_0": rewards[1]} and term == {"agent_0": True}


def test_shaping_takes_back_a_removed_unit(two_rooms):
    env = HouseholdEnv(layout=two_rooms, task=small_task(2), num_agents=1,
                       reward_shaping=True)
    env.reset(seed=0)
    one_put_from(env, held=2)
    env.step({"agent_0": encode(Verb.PUT, S, 0)})
    _, rew, _, _, _ = env.step({"agent_0": encode(Verb.PICK, S, 0)})
    assert rew == {"agent_0": -0.5}


def test_truncation_at_max_ticks():
    env = household_v0.parallel_env(layout="studio", num_agents=2, max_ticks=5)
    env.reset(seed=3)
    for tick in range(1, 6):
        _, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})
        assert infos["agent_0"]["tick"] == tick
        assert term == {"agent_0": False, "agent_1": False}
        assert trunc == {"agent_0": tick == 5, "agent_1": tick == 5}
        assert rew == {"agent_0": 0.0, "agent_1": 0.0}
    assert env.agents == []


def test_default_truncation_is_the_task_step_limit():
    env = household_v0.parallel_env(layout="studio", num_agents=1)
    env.reset(seed=0)
    limit = load_task("prepare_afternoon_tea").step_limits["studio"]
    assert env.world.scene.step_limit == limit
    env.world.tick = limit - 1
    _, _, _, trunc, _ = env.step({"agent_0": 0})
    assert trunc == {"agent_0": True}


# ---- errors ----

@pytest.mark.parametrize("bad", [NUM_ACTIONS, -1, 2.0, "wait", None])
def test_invalid_action_names_the_agent(bad):
    env = household_v0.parallel_env(num_agents=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape(
            f"agent_1: action {bad!r} is outside the action space Discrete(53); "
            "see orgteams.envs.core.actions")):
        env.step({"agent_0": 0, "agent_1": bad})


def test_numpy_actions_are_accepted():
    env = household_v0.parallel_env(num_agents=1)
    env.reset(seed=0)
    env.step({"agent_0": np.int64(1)})
    env.step({"agent_0": np.array(2)})
    assert env.world.tick == 2


def test_unknown_agent():
    env = household_v0.parallel_env(num_agents=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape(
            "unknown agent 'agent_9'; agents are ['agent_0']")):
        env.step({"agent_9": 0})


def test_step_before_reset():
    env = household_v0.parallel_env()
    with pytest.raises(RuntimeError, match=re.escape("call reset() before step()")):
        env.step({"agent_0": 0})


@pytest.mark.parametrize("kwargs, msg", [
    ({"obs_mode": "pixels"}, "obs_mode must be one of ('array', 'text', 'flat', 'image'), "
                             "got 'pixels'"),
    ({"units": 0}, "units must be a positive integer or (min, max) with 1 <= min <= max, "
                   "got 0"),
    ({"units": (3, 2)}, "units must be a positive integer or (min, max) with 1 <= min <= max, "
                        "got (3, 2)"),
    ({"task": "put_dishwasher_easy", "units": 11},
     "units=11: task 'put_dishwasher_easy' allows at most 10 units (5 goal rows x "
     "max_per_predicate 2)"),
    ({"reward_shaping": "lots"}, "reward_shaping must be True, False or one of ('none', "
                                 "'units', 'subgoals'), got 'lots'"),
    ({"image_scale": -1}, "image_scale must be >= 1, got -1"),
    ({"render_mode": "gif"}, "render_mode must be None or one of ('human', 'rgb_array', "
                             "'ansi'), got 'gif'"),
    ({"num_agents": 0}, "num_agents must be a positive integer, got 0"),
    ({"view_radius": 0}, "view_radius must be from 1 to 512, got 0"),
    # Past the largest grid the observation buffers alone outgrew memory (10 GiB at 3000,
    # deep inside numpy); a string or a float failed at the first comparison or reset.
    ({"view_radius": 3000}, "view_radius must be from 1 to 512, got 3000"),
    ({"view_radius": "3"}, "view_radius must be an integer from 1 to 512, got '3'"),
    ({"view_radius": 2.5}, "view_radius must be an integer from 1 to 512, got 2.5"),
    # A negative limit ended every episode after one tick, a string failed in step().
    ({"max_ticks": -1}, "max_ticks must be from 0 to 1000000, got -1"),
    ({"max_ticks": "10"}, "max_ticks must be an integer from 0 to 1000000, got '10'"),
    ({"max_cycles": 2.5}, "max_cycles must be an integer from 0 to 1000000, got 2.5"),
])
def test_constructor_validation(kwargs, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        household_v0.parallel_env(**kwargs)


def test_text_observations_are_the_description():
    env = household_v0.parallel_env(layout="studio", obs_mode="text", num_agents=2)
    obs, _ = env.reset(seed=5)
    for agent in env.agents:
        assert obs[agent] == env.describe(agent)
        assert obs[agent].startswith(f"You are {agent}, ")
        assert env.observation_space(agent).contains(obs[agent])


def test_ansi_render():
    env = household_v0.parallel_env(layout="studio", render_mode="ansi", num_agents=2)
    env.reset(seed=0)
    text = env.render()
    lines = text.splitlines()
    assert len(lines[0]) == env.layout.width
    limit = env.world.scene.step_limit
    assert lines[env.layout.height].startswith(f"tick 0/{limit}  goal: ")


def test_pettingzoo_render_test_passes():
    """PettingZoo's own render_test: every render mode the metadata lists, on the AEC env
    (headless: the tests' SDL dummy driver)."""
    pytest.importorskip("pygame")
    from pettingzoo.test import render_test

    render_test(functools.partial(household_v0.env, layout="studio", num_agents=2))


def test_text_observations_of_a_large_house_are_in_their_space():
    """The Text space was 8,192 characters for every env: full observability of an
    83-room house with 256 agents writes 10,731, so observation_space.contains(obs) was
    False (and the high-level env's space the same)."""
    env = household_v0.parallel_env(layout="generated:83:1", num_agents=256, obs_mode="text",
                                    full_observability=True, task="setup_table")
    space = env.observation_space("agent_0")
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    longest = 0
    for _ in range(3):
        assert all(space.contains(o) for o in obs.values())
        longest = max(longest, *map(len, obs.values()))
        obs, *_ = env.step({a: int(rng.integers(53)) for a in env.agents})
    assert longest > 8192
    assert HighLevelEnv(base=household_v0.parallel_env(
        layout="generated:83:1", num_agents=256, obs_mode="text")).observation_space(
        "agent_0").max_length == space.max_length
    # the usual houses keep the 8,192 of before
    assert household_v0.parallel_env(obs_mode="text").observation_space(
        "agent_0").max_length == 8192
