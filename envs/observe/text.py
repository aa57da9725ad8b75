"""Text views of the world for LLM agents: what one agent sees, and the goal.

Objects and furniture are named by stable ids (``cupcake_2``, ``kitchen_cabinet_1``),
the same ids the high-level actions and the logs use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import Layout
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.core.tasks import MAX_GOAL_PREDICATES, TaskSpec


class _AgentLabels(dict):
    """``labels[a] == f"agent_{a}"``, each string built once."""

    def __missing__(self, a: int) -> str:
        self[a] = label = f"agent_{a}"
        return label



_DEFAULT_LABELS = _AgentLabels()


def _furniture_line(state: HouseholdState, f: int) -> str:
    scene = state.scene
    name = scene.layout.furniture[f].name
    objs = state.contents[f]
    if scene.is_container[f]:
        if not state.container_open[f]:
            return f"{name} (closed)"
        inside = ", ".join(scene.objects[o] for o in objs) if objs else "nothing"
        return f"{name} (open, inside: {inside})"
    if not objs:
        return name
    return f"{name} (on it: {', '.join(scene.objects[o] for o in objs)})"


def text_length_bound(layout: Layout, task: TaskSpec, num_agents: int) -> int:
    """Most characters :func:`describe` can write on ``layout`` (every room, as with full
    observability) for ``task``'s objects and ``num_agents`` default-labelled agents:
    the header, each room's furniture line with every object once, each room's other
    agents (counted as all of them in every room: a safe bound) and every door. The
    text observation space's length (it must contain every observation)."""
    rooms = [len(r) for r in layout.rooms]
    label = len(f"agent_{num_agents - 1}") + 2  # with its ", "
    objects = task.units[1] + MAX_GOAL_PREDICATES * task.extra_objects + task.distractors
    names = max(map(len, load_catalog().object_classes)) + 1 + len(str(objects)) + 2
    header = 60 + label + sum(rooms) + 5 * len(rooms) + 2 * names
    furniture = sum(len(f.name) + len(" (open, inside: nothing); ") for f in layout.furniture)
    per_room = sum(len("In the : no furniture.\nAlso in the : .\n") + 2 * r for r in rooms)
    doors = len("Doors: .") + len(layout.doors) * (len("to the  (closed), ") + max(rooms))
    return (header + furniture + objects * names + per_room + len(rooms) * num_agents * label
            + doors)


def describe(state: HouseholdState, agent: int, names: list[str] | None = None,
             full_observability: bool = False) -> str:
    """What ``agent`` (an index) observes now, as a few lines of text."""
    scene = state.scene
    lay = scene.layout
    label = names.__getitem__ if names else _DEFAULT_LABELS.__getitem__
    cell = state.agent_pos[agent]
    view = scene.view_of_cell[cell]
    here = scene.view_rooms(view)
    rooms = range(len(lay.rooms)) if full_observability else here
    where = " and ".join(lay.rooms[r] for r in here)
    where = f"in the doorway between the {where}" if len(here) > 1 else f"in the {where}"
    held = ", ".join(scene.objects[o] for o in state.hands[agent]) or "nothing"
    lines = [f"You are {label(agent)}, {where}. You hold: {held}."]
    others_in = _others_in(state, agent, view, here)
    for r in rooms:
        furniture = "; ".join(_furniture_line(state, f) for f in scene.furniture_in_room[r])
        lines.append(f"In the {lay.rooms[r]}: {furniture or 'no furniture'}.")
        others = others_in(r)
        if others:
            lines.append(f"Also in the {lay.rooms[r]}: {', '.join(label(a) for a in others)}.")
    doors = []
    near = scene.doors_of_room[here[0]] if len(here) == 1 else sorted(
        {d for r in here for d in scene.doors_of_room[r]})
    for d in near:
        door = lay.doors[d]
        to = [lay.rooms[x] for x in door.rooms if x not in here] or list(lay.rooms[x]
                                                                         for x in door.rooms)
        doors.append(f"to the {to[0]} ({'open' if state.door_open[d] else 'closed'})")
    if doors:
        lines.append(f"Doors: {', '.join(doors)}.")
    return "\n".join(lines)


def _others_in(state: HouseholdState, agent: int, view: int, here: Sequence[int]):
    """``others_in(room)``: the other agents in that room, or, for a room of the viewer's
    own view (``here``), sharing ``view`` (a doorway); by index. With full observability
    the other rooms list only who is in them (sharing the view listed an agent everywhere)."""
    scene = state.scene
    pos = state.agent_pos
    if len(pos) <= 16:  # few agents: plain Python beats numpy's call overhead
        room_of, view_of = scene.room_of_cell, scene.view_of_cell
        return lambda r: [a for a, c in enumerate(pos)
                          if a != agent and (room_of[c] == r
                                             or (view_of[c] == view and r in here))]
    # Many agents: one gather of every agent's room and view, then one comparison per room.
    cells = np.array(pos)
    agent_rooms = scene.room_of_cell[cells]
    same_view = scene.view_array[cells] == view

    def others_in(r: int) -> list[int]:
        seen = (agent_rooms == r) | same_view if r in here else agent_rooms == r
        seen[agent] = False
        return np.flatnonzero(seen).tolist()

    return others_in


def describe_goal(state: HouseholdState) -> str:
    """The goal with progress, e.g. ``ON(cupcake, coffee_table): 2 (1 done)``."""
    parts = [f"{p} ({have} done)" for p, have in zip(state.scene.goal, state.progress)]
    return "; ".join(parts)
