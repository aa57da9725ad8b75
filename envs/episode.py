"""Sample an episode's starting world: goal, objects and where everything starts.

Goal objects start anywhere except on their target (so no goal is done at tick
0), often inside closed containers so the team must explore; a few distractor
objects of other classes are scattered too. Agents start on distinct random floor
cells. All draws come from the ``rng`` passed in (the env's seeded generator).
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.catalog import load_catalog
from orgteams.envs.errors import UserError
from orgteams.envs.layout import Layout
from orgteams.envs.state import HouseholdState, Scene
from orgteams.envs.tasks import TaskSpec


def make_episode(layout: Layout, task: TaskSpec, num_agents: int, rng: np.random.Generator
                 ) -> HouseholdState:
    """Build the initial :class:`HouseholdState` of one episode."""
    catalog = load_catalog()
    furn = layout.furniture
    targets = task.targets()
    missing = sorted(targets - {f.type for f in furn})
    if missing:
        raise UserError(f"task {task.name!r} needs {', '.join(missing)}, which layout "
                        f"{layout.name!r} does not have")
    goal = task.sample_goal(rng)
    classes: list[str] = []
    for p in goal:
        classes += [p.cls] * (p.count + int(rng.integers(0, task.extra_objects + 1)))
    goal_classes = {p.cls for p in goal}
    others = [c for c in catalog.object_classes if c not in goal_classes]
    classes += [others[i] for i in rng.choice(len(others), size=task.distractors)]
    counter: dict[str, int] = {}
    objects = []
    for c in classes:
        counter[c] = counter.get(c, 0) + 1
        objects.append(f"{c}_{counter[c]}")

    capacity = [catalog.furniture[f.type].capacity for f in furn]
    is_container = [catalog.furniture[f.type].is_container for f in furn]
    contents: list[list[int]] = [[] for _ in furn]
    target_rooms = {f.room for f in furn if f.type in targets}
    # Furniture that may hold a starting object: none of the task's targets.
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
