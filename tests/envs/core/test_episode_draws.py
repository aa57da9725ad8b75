"""make_episode with its per-(layout, task) tables draws exactly what the plain algorithm
draws: the same states, the same errors and the same generator state afterwards, also
when furniture fills up (crowded tasks) and with ``far`` placement."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.envs import HouseholdEnv
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import list_layouts
from orgteams.envs.core.start import make_episode
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.core.tasks import load_task, task_from_dict
from orgteams.errors import UserError


def plain_make_episode(layout, task, num_agents, rng):
    """make_episode as first written (no cached tables): the reference."""
    catalog = load_catalog()
    furn = layout.furniture
    targets = task.targets()
    missing = sorted(targets - {f.type for f in furn})
    if missing:
        raise UserError(f"task {task.name!r} needs {', '.join(missing)}, which layout "
                        f"{layout.name!r} does not have")
    goal = task.sample_goal(rng)
    classes = []
    for p in goal:
        classes += [p.cls] * (p.count + int(rng.integers(0, task.extra_objects + 1)))
    goal_classes = {p.cls for p in goal}
    others = [c for c in catalog.object_classes if c not in goal_classes]
    classes += [others[i] for i in rng.choice(len(others), size=task.distractors)]
    counter, objects = {}, []
    for c in classes:
        counter[c] = counter.get(c, 0) + 1
        objects.append(f"{c}_{counter[c]}")
    capacity = [catalog.furniture[f.type].capacity for f in furn]
    is_container = [catalog.furniture[f.type].is_container for f in furn]
    contents = [[] for _ in furn]
    target_rooms = {f.room for f in furn if f.type in targets}
    holders = [i for i, f in enumerate(furn) if f.type not in targets]
    goal_targets = {p.cls: p.target for p in goal}
    for obj, cls in enumerate(classes):
        banned = goal_targets.get(cls)
        spots = [i for i in holders
                 if furn[i].type != banned and len(contents[i]) < capacity[i]]
        if task.far and cls in goal_targets:
            far = [i for i in spots if furn[i].room not in target_rooms]
            spots = far or spots
        if not spots:
            raise UserError(f"layout {layout.name!r} has no room left for {cls}: "
                            "add furniture or lower the task's units")
        in_container = [i for i in spots if is_container[i]]
        on_surface = [i for i in spots if not is_container[i]]
        pool = in_container if (in_container and (not on_surface or
                                rng.random() < task.container_prob)) else on_surface
        contents[pool[int(rng.integers(len(pool)))]].append(obj)
    scene = Scene(layout, task.name, goal, tuple(objects), num_agents,
                  task.step_limit(layout.name, len(layout.rooms)))
    floor = scene.floor_cells
    if num_agents > len(floor):
        raise UserError(f"layout {layout.name!r} has {len(floor)} floor cells; cannot "
                        f"place {num_agents} agents")
    starts = rng.choice(floor, size=num_agents, replace=False)
    return HouseholdState(
        scene=scene, tick=0, agent_pos=[int(c) for c in starts],
        hands=[() for _ in range(num_agents)], contents=[tuple(c) for c in contents],
        container_open=[not scene.is_container[i] for i in range(len(furn))],
        door_open=[d.initially_open for d in layout.doors])


def draws(make, layout, task, seed, episodes=12):
    """Each episode's state (or error message), then the generator's state."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(episodes):
        try:
            s = make(layout, task, 3, rng)
            out.append((s.to_dict(), s.progress, s.scene.object_class))
        except UserError as exc:
            out.append(str(exc))
    return out, rng.bit_generator.state


def crowded(base: str, distractors: int, far: bool):
    t = load_task(base)
    return task_from_dict({
        "name": f"{base}_crowded", "description": "fills furniture",
        "candidates": [f"{r.upper()}({c}, {g})" for r, c, g in t.candidates],
        "units": [5, 9], "extra_objects": 3, "distractors": distractors, "far": far})


@pytest.mark.parametrize("layout_name", list_layouts() + ["generated:4:1"])
@pytest.mark.parametrize("base", ["prepare_afternoon_tea", "put_dishwasher_hard",
                                  "setup_table"])
def test_make_episode_draws_as_the_plain_algorithm(layout_name, base):
    layout = HouseholdEnv(layout=layout_name, task=base, num_agents=3).layout
    results = []
    for task in [load_task(base)] + [crowded(base, d, far) for d in (20, 45, 90)
                                     for far in (False, True)]:
        mine = draws(make_episode, layout, task, seed=len(results))
        assert mine == draws(plain_make_episode, layout, task, seed=len(results))
        results += mine[0]
    # The crowded tasks reach the full-furniture path (an episode with furniture at
    # its capacity).
    capacity = [load_catalog().furniture[f.type].capacity for f in layout.furniture]
    assert any(len(inside) == cap for r in results if not isinstance(r, str)
               for inside, cap in zip(r[0]["contents"], capacity))


def test_no_room_left_is_the_same_error():
    layout = HouseholdEnv(layout="studio", task="setup_table", num_agents=3).layout
    task = crowded("setup_table", 90, True)
    mine = draws(make_episode, layout, task, 0)
    assert mine == draws(plain_make_episode, layout, task, 0)
    assert re.fullmatch(r"layout 'studio' has no room left for [a-z_]+: add furniture or "
                        r"lower the task's units", mine[0][0])


def test_each_task_object_gets_its_own_tables():
    layout = HouseholdEnv(layout="apartment", task="setup_table", num_agents=3).layout
    near, far = crowded("setup_table", 3, False), crowded("setup_table", 3, True)
    for task in (near, far, near):  # a second task on the same layout, then back
        assert draws(make_episode, layout, task, 5) == \
            draws(plain_make_episode, layout, task, 5)


def test_missing_target_is_one_line():
    layout = HouseholdEnv(layout="studio", task="put_dishwasher_easy", num_agents=3).layout
    task = task_from_dict({"name": "t", "description": "d",
                           "candidates": ["ON(cupcake, bench)"]})
    with pytest.raises(UserError, match="^task 't' needs bench, which layout "
                                        "'studio' does not have$"):
        make_episode(layout, task, 3, np.random.default_rng(0))
