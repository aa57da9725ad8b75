"""Long seeded random runs on every layout, checking world invariants every tick."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.envs import household_v0, list_layouts
from orgteams.envs.core.actions import HAND_CAPACITY, MAX_SLOTS, NUM_ACTIONS
from orgteams.envs.core.dynamics import EVENT_TYPES
from orgteams.envs.core.state import is_walkable
from orgteams.envs.observe.array_obs import BASE_CHANNELS

TICKS = 250


def random_actions(rng: np.random.Generator, agents: list[str]) -> dict[str, int]:
    """Mostly moves and useful interactions, so agents roam and touch things."""
    out = {}
    for agent in agents:
        kind = rng.random()
        d = int(rng.integers(4))
        if kind < 0.45:
            out[agent] = 1 + d  # move
        elif kind < 0.6:
            out[agent] = 5 + d  # open
        elif kind < 0.65:
            out[agent] = 9 + d  # close
        elif kind < 0.8:
            out[agent] = 13 + d * HAND_CAPACITY + int(rng.integers(HAND_CAPACITY))  # put
        elif kind < 0.97:
            out[agent] = 21 + d * MAX_SLOTS + int(rng.integers(3))  # pick
        else:
            out[agent] = int(rng.integers(NUM_ACTIONS))
    return out


def check_invariants(env) -> None:
    state = env.world
    scene = state.scene
    furniture = scene.layout.furniture
    # Every object is in exactly one place.
    placed = [o for c in state.contents for o in c] + [o for h in state.hands for o in h]
    assert sorted(placed) == list(range(len(scene.objects)))
    # Agents stand on floor or in an open doorway, one per cell.
    assert len(set(state.agent_pos)) == len(state.agent_pos)
    for cell in state.agent_pos:
        assert is_walkable(state, cell), divmod(cell, scene.width)
    assert all(len(h) <= HAND_CAPACITY for h in state.hands)
    assert all(len(c) <= cap for c, cap in zip(state.contents, scene.capacity))
    assert all(state.container_open[f] for f in range(len(furniture))
               if not scene.is_container[f])
    # Closed containers' contents reach no observation, array or text.
    hidden = [(f, o) for f, inside in enumerate(state.contents)
              if not state.container_open[f] for o in inside]
    r = env.view_radius
    for agent in env.agents:
        a = env.agent_index[agent]
        image = env._observer.observe(state, a)["image"]
        row, col = state.agent_cell(a)
        for f in {f for f, _ in hidden}:
            fr, fc = furniture[f].cell
            if abs(fr - row) <= r and abs(fc - col) <= r:
                assert not image[r + fr - row, r + fc - col, BASE_CHANNELS:].any()
        text = env.describe(agent)
        for _, o in hidden:
            assert not re.search(rf"\b{scene.objects[o]}\b", text), scene.objects[o]


@pytest.mark.parametrize("num_agents", [1, 3, 8])
@pytest.mark.parametrize("layout", list_layouts())
def test_random_play_keeps_invariants(layout, num_agents):
    env = household_v0.parallel_env(layout=layout, num_agents=num_agents, view_radius=5,
                                    max_ticks=10_000)
    rng = np.random.default_rng(num_agents)
    env.reset(seed=num_agents)
    check_invariants(env)
    counts: dict[str, int] = {}
    start = list(env.world.agent_pos)
    moved = False
    for _ in range(TICKS):
        _, _, _, _, infos = env.step(random_actions(rng, env.agents))
        check_invariants(env)
        moved = moved or env.world.agent_pos != start
        for info in infos.values():  # the default infos: a count per event kind
            for kind in EVENT_TYPES:
                counts[kind] = counts.get(kind, 0) + info[kind]
        if not env.agents:
            break
    # The run exercised the dynamics, not just waiting.
    assert moved
    assert counts.get("invalid_action", 0) > 0
    if num_agents > 1:
        assert counts.get("opened", 0) > 0 and counts.get("picked", 0) > 0, counts
    assert len(set(env.world.agent_pos)) == num_agents
