"""Sample an episode's starting world: goal, objects and where everything starts.

Goal objects start anywhere except on their target (so no goal is done at tick
0), often inside closed containers so the team must explore; a few distractor
objects of other classes are scattered too. Agents start on distinct random floor
cells. All draws come from the ``rng`` passed in (the env's seeded generator).

Every reset of the scalar env and of each household of the batched core draws one
episode here, so what depends on the layout and task alone (which furniture may hold
what, the catalog's lists) is computed once per (layout, task) pair
(:class:`_Places`) and the draws stay the same calls in the same order.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import Layout
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.core.tasks import TaskSpec
from orgteams.errors import UserError


class _Places:
    """Where objects of one (layout, task) may start, before any is placed: per banned
    target type and "far" flag, the candidate furniture in index order, split into
    containers and surfaces. Read-only once built."""

    def __init__(self, layout: Layout, task: TaskSpec):
        catalog = load_catalog()
        furn = layout.furniture
        self.layout, self.task = layout, task
        targets = task.targets()
        missing = sorted(targets - {f.type for f in furn})
        self.missing = (f"task {task.name!r} needs {', '.join(missing)}, which layout "
                        f"{layout.name!r} does not have") if missing else None
        self.capacity = [catalog.furniture[f.type].capacity for f in furn]
        self.is_container = [catalog.furniture[f.type].is_container for f in furn]
        self.target_rooms = {f.room for f in furn if f.type in targets}
        # Furniture that may hold a starting object: none of the task's targets.
        self.holders = [i for i, f in enumerate(furn) if f.type not in targets]
        self.object_classes = catalog.object_classes
        self.container_open = [not c for c in self.is_container]
        self.door_open = [d.initially_open for d in layout.doors]
        self.step_limit = task.step_limit(layout.name, len(layout.rooms))
        self._spots: dict[tuple[str | None, bool], tuple[list[int], list[int], list[int]]] = {}
        self._others: dict[frozenset[str], list[str]] = {}

    def spots(self, banned: str | None, far: bool) -> tuple[list[int], list[int], list[int]]:
        """(spots, in containers, on surfaces) for an object whose goal target is
        ``banned`` (None: not a goal class), with no furniture full."""
        key = (banned, far)
        if key not in self._spots:
            furn = self.layout.furniture
            spots = [i for i in self.holders if furn[i].type != banned]
            if far:
                spots = [i for i in spots if furn[i].room not in self.target_rooms] or spots
            self._spots[key] = (spots, [i for i in spots if self.is_container[i]],
                                [i for i in spots if not self.is_container[i]])
        return self._spots[key]

    def others(self, goal_classes: frozenset[str]) -> list[str]:
        """The catalog's classes outside the goal (distractors are drawn from them)."""
        if goal_classes not in self._others:
            self._others[goal_classes] = [c for c in self.object_classes
                                          if c not in goal_classes]
        return self._others[goal_classes]


def _places(layout: Layout, task: TaskSpec) -> _Places:
    """The :class:`_Places` of ``layout`` and ``task``, kept on the layout (as
    ``Scene``'s per-layout tables); keyed by the task's identity, which it holds."""
    cache = layout.__dict__.setdefault("_episode_places", {})
    places = cache.get(id(task))
    if places is None or places.task is not task:
        places = cache[id(task)] = _Places(layout, task)
    return places


def make_episode(layout: Layout, task: TaskSpec, num_agents: int, rng: np.random.Generator
                 ) -> HouseholdState:
    """Build the initial :class:`HouseholdState` of one episode."""
    places = _places(layout, task)
    if places.missing:
        raise UserError(places.missing)
    goal = task.sample_goal(rng)
    classes: list[str] = []
    for p in goal:
        classes += [p.cls] * (p.count + int(rng.integers(0, task.extra_objects + 1)))
    goal_targets = {p.cls: p.target for p in goal}
    others = places.others(frozenset(goal_targets))
    classes += [others[i] for i in rng.choice(len(others), size=task.distractors)]
    counter: dict[str, int] = {}
    objects = []
    for c in classes:
        counter[c] = counter.get(c, 0) + 1
        objects.append(f"{c}_{counter[c]}")

    furn, capacity, is_container = layout.furniture, places.capacity, places.is_container
    contents: list[list[int]] = [[] for _ in capacity]
    full: set[int] = set()  # furniture at capacity: filtered out of the candidates
    for obj, cls in enumerate(classes):
        spots, in_container, on_surface = places.spots(
            goal_targets.get(cls), task.far and cls in goal_targets)
        if full:  # rare: the candidates without full furniture, as when none was full
            spots = [i for i in places.holders if furn[i].type != goal_targets.get(cls)
                     and i not in full]
            if task.far and cls in goal_targets:
                far = [i for i in spots if furn[i].room not in places.target_rooms]
                spots = far or spots
            in_container = [i for i in spots if is_container[i]]
            on_surface = [i for i in spots if not is_container[i]]
        if not spots:
            raise UserError(f"layout {layout.name!r} has no room left for {cls}: "
                            "add furniture or lower the task's units")
        pool = in_container if (in_container and (not on_surface or
                                rng.random() < task.container_prob)) else on_surface
        spot = pool[int(rng.integers(len(pool)))]
        contents[spot].append(obj)
        if len(contents[spot]) >= capacity[spot]:
            full.add(spot)

    scene = Scene(layout, task.name, goal, tuple(objects), num_agents, places.step_limit)
    floor = scene.floor_cells
    if num_agents > len(floor):
        raise UserError(f"layout {layout.name!r} has {len(floor)} floor cells; cannot "
                        f"place {num_agents} agents")
    starts = rng.choice(floor, size=num_agents, replace=False)
    return HouseholdState(
        scene=scene, tick=0, agent_pos=[int(c) for c in starts],
        hands=[() for _ in range(num_agents)], contents=[tuple(c) for c in contents],
        container_open=list(places.container_open), door_open=list(places.door_open))
