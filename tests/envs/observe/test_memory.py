"""A team's memories updated together (one Sight a tick) hold exactly what each memory
updated alone under the plain visibility rule would: random states and heard notes."""

from __future__ import annotations

import json
import random

import pytest

from orgteams.envs.core.state import HouseholdState
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.observe.memory import AgentMemory, FurnitureBelief, Sight, Views, update_all


def plain_update(mem: AgentMemory, state: HouseholdState) -> None:
    """The visibility rule written plainly, memory by memory (as memory.py had it before
    the 256-agent team shared a Sight): the reference the fast path must match."""
    mem.version += 1
    scene = mem.scene
    lay = scene.layout
    names = scene.objects
    mem.tick = state.tick
    cell = state.agent_pos[mem.agent]
    view = scene.view_of_cell[cell]
    visible = scene.view_rooms(view)
    room = scene.room_of_cell_list[cell]
    mem.room = lay.rooms[room] if room >= 0 else ""
    mem.held = tuple(names[o] for o in state.hands[mem.agent])
    for o in mem.held:
        mem._see(o, mem.name, "agent")
    for a in range(len(state.agent_pos)):
        c = state.agent_pos[a]
        if a == mem.agent or not (scene.room_of_cell_list[c] in visible
                                  or scene.view_of_cell[c] == view):
            continue
        held = {names[o] for o in state.hands[a]}
        mem._forget_at(mem.agent_names[a], keep=held)
        for o in held:
            mem._see(o, mem.agent_names[a], "agent")
    for r in visible:
        mem.rooms_seen[lay.rooms[r]] = state.tick
        for f in scene.furniture_in_room[r]:
            spec = lay.furniture[f]
            is_open = state.container_open[f]
            belief = mem.furniture.get(spec.name)
            if belief is None:
                belief = mem.furniture[spec.name] = FurnitureBelief(
                    spec.name, spec.type, lay.rooms[spec.room], scene.is_container[f],
                    is_open, None, state.tick)
            belief.open, belief.last_seen = is_open, state.tick
            if is_open:
                contents = tuple(names[o] for o in state.contents[f])
                belief.contents = contents
                mem._forget_at(spec.name, keep=set(contents))
                for o in contents:
                    mem._see(o, spec.name, "furniture")


def random_state(scene, base: HouseholdState, tick: int, rng: random.Random) -> HouseholdState:
    """Agents anywhere (doorways often), each object in some hand or on some furniture,
    containers open or closed at random."""
    rooms_cells = [c for c, v in scene.view_of_cell.items() if v < len(scene.layout.rooms)]
    doors = sorted(scene.door_at)
    n, furniture = len(base.agent_pos), len(scene.layout.furniture)
    pos = [rng.choice(doors if rng.random() < 0.3 else rooms_cells) for _ in range(n)]
    hands: list[list[int]] = [[] for _ in range(n)]
    contents: list[list[int]] = [[] for _ in range(furniture)]
    for o in range(len(scene.objects)):
        if rng.random() < 0.3:
            hands[rng.randrange(n)].append(o)
        else:
            contents[rng.randrange(furniture)].append(o)
    is_open = [not scene.is_container[f] or rng.random() < 0.6 for f in range(furniture)]
    return HouseholdState(scene, tick, pos, [tuple(h) for h in hands],
                          [tuple(c) for c in contents], is_open, list(base.door_open))


def dump(mem: AgentMemory) -> str:
    """Everything the memory holds, in its dicts' order (json keeps it; == would not)."""
    return json.dumps([mem.version, mem.to_dict()])


@pytest.mark.parametrize("seed", range(4))
def test_a_team_updated_on_one_sight_holds_what_each_plain_update_does(seed):
    env = HighLevelEnv(layout="apartment", task="put_fridge", num_agents=12)
    env.reset(seed=seed)
    base = env.world
    scene, names = base.scene, env.possible_agents
    rng = random.Random(seed)
    fast = [AgentMemory(scene, i, names) for i in range(len(names))]
    plain = [AgentMemory(scene, i, names) for i in range(len(names))]
    views = Views(scene, names)
    reached = {"agent beliefs": 0, "doorway": 0, "forgotten": 0, "heard": 0}
    # runs of states that only change a little, and jumps, so beliefs go stale, are
    # confirmed, and are contradicted
    state = base
    for tick in range(1, 120):
        if rng.random() < 0.3:
            state = random_state(scene, base, tick, rng)
        else:  # one agent moves or one container flips: most views see what they saw
            pos, is_open = list(state.agent_pos), list(state.container_open)
            if rng.random() < 0.5:
                pos[rng.randrange(len(pos))] = rng.choice(sorted(scene.view_of_cell))
            else:
                f = rng.randrange(len(is_open))
                is_open[f] = not scene.is_container[f] or not is_open[f]
            state = HouseholdState(scene, tick, pos, list(state.hands), list(state.contents),
                                   is_open, list(state.door_open))
        before = sum(len(m.objects) for m in plain)
        reached["agent beliefs"] += sum(any(b.kind == "agent" for b in m.objects.values())
                                        for m in plain)
        reached["doorway"] += sum(scene.view_of_cell[c] >= len(scene.layout.rooms)
                                  for c in state.agent_pos)
        update_all(fast, state, Sight(state, views))
        for m in plain:
            plain_update(m, state)
        reached["forgotten"] += before > sum(len(m.objects) for m in plain)
        # one memory alone, as a single player's memory is updated
        alone = rng.randrange(len(names))
        assert [dump(m) for m in fast] == [dump(m) for m in plain], tick
        for _ in range(rng.randrange(4)):  # teammates' reports, sometimes stale
            i = rng.randrange(len(names))
            obj = rng.choice(scene.objects)
            where = rng.choice([f.name for f in scene.layout.furniture] + list(names))
            heard = tick - rng.randrange(3)
            fast[i].note_object(obj, where, heard)
            plain[i].note_object(obj, where, heard)
            reached["heard"] += 1
        fast[alone].update(state)
        plain_update(plain[alone], state)
        assert [dump(m) for m in fast] == [dump(m) for m in plain], tick
    assert all(v > 20 for v in reached.values()), reached
