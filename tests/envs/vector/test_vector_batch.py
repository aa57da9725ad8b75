"""BatchState.pack writes a household into a row; unpack reads it back."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs import HouseholdEnv
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.core.tasks import load_task
from orgteams.envs.vector.batch import BatchState, max_objects
from orgteams.envs.vector.tables import layout_tables


def played_states(seed: int, ticks: int = 150) -> list:
    """States of a scalar episode played with valid interactions preferred (objects in
    hands, containers open, goal progress)."""
    env = HouseholdEnv(layout="studio", task="put_dishwasher_easy", num_agents=3,
                       reward_shaping=True)
    _, infos = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    states = [env.world]
    for _ in range(ticks):
        acts = {}
        for a in env.agents:
            valid = np.flatnonzero(infos[a]["action_mask"])
            acts[a] = int(rng.choice(valid[valid >= 5] if (valid >= 5).any() else valid))
        _, _, term, trunc, infos = env.step(acts)
        if any(term.values()) or any(trunc.values()):
            break
        states.append(env.world)
    return states


def with_progress(state):
    """``state`` with one object of the first goal row moved onto its target."""
    scene, row = state.scene, state.scene.goal[0]
    obj = scene.object_class.index(row.cls)
    target = min(scene.goal_targets[0])
    contents = [tuple(o for o in inside if o != obj) for inside in state.contents]
    contents[target] += (obj,)
    hands = [tuple(o for o in held if o != obj) for held in state.hands]
    return HouseholdState(scene, state.tick, state.agent_pos, hands, contents,
                          state.container_open, state.door_open)


def test_pack_round_trips_states_with_held_objects():
    states = [s for seed in range(3) for s in played_states(seed)[::10]]
    states += [with_progress(states[0]), with_progress(states[-1])]
    assert any(any(h) for s in states for h in s.hands)  # objects in hands
    assert all(any(s.progress) for s in states[-2:])  # goal progress
    assert any(not all(s.container_open) for s in states)
    tables = layout_tables(states[0].scene, 7, False)
    n = len(states) + 3
    batch = BatchState.empty(n, 3, tables, max_objects(load_task("put_dishwasher_easy")))
    filler = states[len(states) // 2]
    for row in range(n):
        batch.pack(row, filler)
    rows = np.random.default_rng(0).permutation(n)[:len(states)]
    for row, state in zip(rows.tolist(), states):
        batch.pack(row, state)
    for row, state in zip(rows.tolist(), states):
        back = batch.unpack(row, state.scene)
        assert back == state and back.progress == state.progress
    for row in sorted(set(range(n)) - set(rows.tolist())):  # the others keep theirs
        assert batch.unpack(row, filler.scene) == filler


def test_pack_rejects_too_many_objects_before_writing():
    state = played_states(0, ticks=0)[0]
    tables = layout_tables(state.scene, 7, False)
    batch = BatchState.empty(2, 3, tables, len(state.scene.objects) - 1)
    with pytest.raises(RuntimeError, match=f"^episode has {len(state.scene.objects)} "
                       f"objects; the batch holds {len(state.scene.objects) - 1} "
                       r"\(max_objects is wrong\)$"):
        batch.pack(1, state)
    assert (batch.object_class == -1).all() and (batch.pos == 0).all()
