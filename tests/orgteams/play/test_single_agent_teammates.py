"""household_v0.single_agent_env beside high-level teammates (make_teammates): planners
and LLM members, under an organization or none, mixed with per-tick teammates. What is
checked is what the episode did: the world, the play log, the teammates' prompts."""

from __future__ import annotations

import re

import numpy as np
import pytest
from doubles import log_dicts, scripted_teammates
from gymnasium.utils.env_checker import check_env

from orgteams.envs import household_v0
from orgteams.errors import UserError
from orgteams.organizations.rounds.episode_log import read_log
from orgteams.play import make_teammates

KW = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 3, "max_ticks": 120}


def wait_out(env, seed: int) -> tuple[list, dict]:
    """The learner waits the whole episode; (rewards, last info)."""
    env.reset(seed=seed)
    rewards = []
    while True:
        _, rew, term, trunc, info = env.step(0)
        rewards.append(rew)
        if term or trunc:
            return rewards, info


def test_planner_teammates_finish_the_goal_around_a_waiting_learner():
    env = household_v0.single_agent_env("agent_2", make_teammates("planner"), **KW)
    start = env.reset(seed=0)[1]
    assert start["tick"] == 0 and start["action_mask"].shape == (53,)
    pos = env.base.world.agent_pos[2]
    rewards, info = wait_out(env, 0)
    world = env.base.world
    assert world.success and info["is_success"] and rewards[-1] == 1.0
    assert info["tick"] == len(rewards) == world.tick  # one tick per step
    assert world.agent_pos[2] == pos  # the learner only waited: nobody pushed it
    stats = env.episode_statistics()
    assert stats["units_done"] == stats["units_total"] == 3
    check_env(env, skip_render_check=True)


def test_under_leader_the_planner_leader_orders_the_learner(tmp_path):
    """The learner's agent holds its seat: the planner leader assigns it work (in the
    play log), and with a waiting learner the orders lapse and the planners finish."""
    log = tmp_path / "adhoc.jsonl"
    teammates = make_teammates("planner", organization="leader", log_path=str(log))
    env = household_v0.single_agent_env("agent_1", teammates, **KW)
    _, info = wait_out(env, 1)
    env.close()
    teammates.log.end()
    assert info["is_success"]
    lines = log_dicts(read_log(log))
    assigns = [r for r in lines if r.get("message_kind") == "assign"]
    assert assigns and {r["agent"] for r in assigns} == {"agent_0"}
    assert "agent_1" in {a for r in assigns for a in r["delivered"]}
    assert lines[-1]["player"] == "agent_1" and lines[-1]["player_role"] == "member"


def test_llm_teammates_decide_and_see_the_learner_as_a_teammate(monkeypatch):
    backends = scripted_teammates(monkeypatch, say="news from {agent}")
    teammates = make_teammates("scripted", organization="leader")
    env = household_v0.single_agent_env("agent_0", teammates, **KW)
    env.reset(seed=0)
    for _ in range(3):
        env.step(0)
    env.close()
    assert set(backends) == {"agent_1", "agent_2"}
    prompt = "\n".join(m["content"] for m in backends["agent_1"].calls[0])
    assert "agent_0" in prompt  # the learner's agent is on their team
    assert teammates.decisions >= 2


def test_mixed_teammates_one_planner_one_random():
    env = household_v0.single_agent_env(
        "agent_1", {"agent_0": make_teammates("planner"), "agent_2": "random"}, **KW)
    env.reset(seed=3)
    start = list(env.base.world.agent_pos)
    for _ in range(15):
        env.step(0)
    world = env.base.world
    assert world.agent_pos[1] == start[1]
    assert world.agent_pos[0] != start[0] and world.agent_pos[2] != start[2]
    assert world.tick == 15


def test_bad_teammate_specs_are_one_line():
    with pytest.raises(UserError, match=re.escape("Unknown teammates 'planer'.")):
        make_teammates("planer")
    with pytest.raises(UserError, match=re.escape("Unknown organization 'leadr'.")):
        make_teammates("planner", organization="leadr")


def test_the_learners_observation_under_teammates_is_the_scalar_envs():
    """High-level path: the household builds no observations of its own, the env asks it
    for the learner's; they equal a plain env's for the same world."""
    env = household_v0.single_agent_env("agent_2", make_teammates("planner"), **KW)
    obs, info = env.reset(seed=4)
    plain = household_v0.parallel_env(obs_mode="flat", **KW)
    for _ in range(5):
        obs, _, _, _, info = env.step(int(np.flatnonzero(env.action_masks())[-1]))
    plain.reset(options={"state": env.base.world})
    want, mask = plain.observe("agent_2")
    np.testing.assert_array_equal(obs, want)
    np.testing.assert_array_equal(info["action_mask"], mask)


def test_a_pickled_env_with_planner_teammates_steps_as_the_original():
    """SubprocVecEnv and ray ship the env itself: it failed to pickle (the episode's
    tokenizer holds a lock, the members' view refused its slot being set), and once it
    did, the copy drew a door it opened still shut (the observer's buffers are views)."""
    import pickle

    teammates = make_teammates("planner", organization="leader")
    env = household_v0.single_agent_env("agent_1", teammates, **KW)
    env.reset(seed=0)
    for _ in range(5):
        env.step(0)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.policies["agent_0"] is not teammates
    rng = np.random.default_rng(0)
    houses = set()  # what the observer redraws: doors, containers, what lies where
    while True:
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        first, second = env.step(action), copy.step(action)
        assert np.array_equal(first[0], second[0])
        assert first[1:4] == second[1:4]
        assert first[4].keys() == second[4].keys()
        assert all(np.array_equal(first[4][k], second[4][k]) for k in first[4])
        assert copy.base.world == env.base.world
        world = env.base.world
        houses.add(repr((world.door_open, world.container_open, world.contents)))
        if first[2] or first[3]:
            break
    assert len(houses) > 3  # the stretch compared redrew the house, not only the agents
