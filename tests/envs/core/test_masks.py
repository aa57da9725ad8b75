"""Action masks agree with the dynamics: masked out iff playing the action alone fails."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS, Verb, encode
from orgteams.envs.core.dynamics import transition
from orgteams.envs.core.masks import action_masks

FAILURES = ("invalid_action", "collision")


def fails_alone(state, agent: int, action: int) -> bool:
    """Does ``action`` of ``agent`` fail while everyone else waits?"""
    joint = [0] * len(state.agent_pos)
    joint[agent] = action
    _, events = transition(state, joint)
    return any(e.agent == agent and e.type in FAILURES for e in events)


def check_state(state) -> int:
    masks = action_masks(state)
    assert masks.shape == (len(state.agent_pos), NUM_ACTIONS) and masks.dtype == np.int8
    for a in range(len(state.agent_pos)):
        for x in range(NUM_ACTIONS):
            assert masks[a, x] == (not fails_alone(state, a, x)), (a, x, state.to_dict())
    return int(masks.sum())


def random_states(layout: str, task: str, agents: int, seed: int, ticks: int):
    """States along a masked-random walk that prefers interacting to moving, so
    containers open, hands fill and objects move around."""
    env = household_v0.parallel_env(layout=layout, task=task, num_agents=agents,
                                    max_ticks=10_000)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(ticks):
        yield env.world
        masks = action_masks(env.world)
        joint = {}
        for name, m in zip(env.agents, masks):
            valid = np.flatnonzero(m)
            weights = np.where(valid >= 5, 6.0, 1.0)
            joint[name] = int(rng.choice(valid, p=weights / weights.sum()))
        env.step(joint)
        if not env.agents:
            env.reset(seed=seed + 1000)


@pytest.mark.parametrize(("layout", "task", "agents"), [
    ("studio", "put_dishwasher_easy", 2),
    ("apartment", "prepare_afternoon_tea", 3),
    ("generated:6:3", "put_fridge", 4),
])
def test_masks_match_transition_on_random_states(layout, task, agents):
    valid_total = 0
    for k, state in enumerate(random_states(layout, task, agents, seed=7, ticks=300)):
        if k % 5 == 0:  # every 5th state is checked action by action
            valid_total += check_state(state)
    assert valid_total > 60 * agents * 2  # more than wait and one move on average


def test_masks_cover_the_edge_cases(two_rooms, make_state):
    # Agent 0 left of the closed door (2, 4), agent 1 in the doorway-to-be's east side.
    state = make_state(two_rooms, [(2, 3), (2, 5)],
                       contents={"kitchen_table": ["cup_1"]}, hands=[["plate_1", "fork_1"], []])
    m = action_masks(state)
    east = 1
    assert m[0, encode(Verb.OPEN, east)] == 1 and m[0, encode(Verb.MOVE, east)] == 0
    assert m[0, encode(Verb.PICK, 2, 0)] == 0  # table south, but both hands are full
    assert m[0, encode(Verb.PUT, 2, 1)] == 1
    opened = make_state(two_rooms, [(2, 3), (2, 4)], doors_open=[True], hands=[[], []])
    m = action_masks(opened)
    assert m[0, encode(Verb.CLOSE, east)] == 0  # someone stands in the doorway
    assert m[0, encode(Verb.MOVE, east)] == 0  # ... so walking there collides
    assert m[1, encode(Verb.MOVE, 3)] == 0 and m[1, encode(Verb.MOVE, east)] == 1
    for s in (state, opened):
        check_state(s)


def test_full_furniture_refuses_puts(inline_layout, make_state):
    layout = inline_layout(["#####", "#kkk#", "#kkN#", "#####"], {"k": "kitchen"},
                           {"N": "nightstand"})  # capacity 4
    full = make_state(layout, [(1, 3)], contents={"nightstand": ["a_1", "b_1", "c_1", "d_1"]},
                      hands=[["e_1"]])
    m = action_masks(full)
    south = 2
    assert m[0, encode(Verb.PUT, south, 0)] == 0 and m[0, encode(Verb.PICK, south, 3)] == 1
    check_state(full)


def test_env_infos_carry_masks_and_the_option_puts_them_in_observations():
    env = household_v0.parallel_env(layout="studio", task="put_dishwasher_easy", num_agents=2)
    obs, infos = env.reset(seed=3)
    for i, a in enumerate(env.agents):
        assert infos[a]["action_mask"].dtype == np.int8
        assert np.array_equal(infos[a]["action_mask"], action_masks(env.world)[i])
    obs, _, _, _, infos = env.step({a: 1 for a in env.agents})
    assert np.array_equal(infos["agent_1"]["action_mask"], action_masks(env.world)[1])
    assert "action_mask" not in obs["agent_0"]

    wrapped = household_v0.parallel_env(layout="studio", task="put_dishwasher_easy",
                                        num_agents=2, action_mask_in_obs=True)
    obs, infos = wrapped.reset(seed=3)
    space = wrapped.observation_space("agent_0")
    assert set(space.spaces) == {"observation", "action_mask"}
    assert space.contains(obs["agent_0"])
    assert np.array_equal(obs["agent_0"]["action_mask"], action_masks(wrapped.world)[0])
    obs, _, _, _, infos = wrapped.step({a: 1 for a in wrapped.agents})
    assert np.array_equal(obs["agent_1"]["action_mask"], action_masks(wrapped.world)[1])
    # one place for the mask per mode: with action_mask_in_obs not in the info too
    assert all("action_mask" not in i for i in infos.values())

    unmasked = household_v0.parallel_env(layout="studio", task="put_dishwasher_easy",
                                         num_agents=2, action_masks=False)
    obs, infos = unmasked.reset(seed=3)
    assert all("action_mask" not in i for i in infos.values())
    assert not isinstance(obs["agent_0"], dict) or "action_mask" not in obs["agent_0"]


@pytest.mark.parametrize(("layout", "agents"), [("studio", 2), ("house", 5)])
def test_env_masks_reused_across_ticks_equal_fresh_ones(layout, agents):
    env = household_v0.parallel_env(layout=layout, num_agents=agents, max_ticks=10_000)
    _, infos = env.reset(seed=11)
    rng = np.random.default_rng(11)
    for t in range(600):
        fresh = action_masks(env.world)
        for i, a in enumerate(env.agents):
            assert np.array_equal(infos[a]["action_mask"], fresh[i]), t
            assert not infos[a]["action_mask"].flags.writeable
        if t % 2:  # uniform ids: mostly no-ops, the reused path
            acts = {a: int(x) for a, x in zip(env.agents, rng.integers(0, NUM_ACTIONS, agents))}
        else:  # valid ids: moves, opens, picks and puts, the recomputed path
            acts = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"])))
                    for a in env.agents}
        _, _, _, _, infos = env.step(acts)
