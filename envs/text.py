"""Text views of the world for LLM agents: what one agent sees, and the goal.

Objects and furniture are named by stable ids (``cupcake_2``, ``kitchen_cabinet_1``),
the same ids the high-level actions and the logs use.
"""

from __future__ import annotations

from orgteams.envs.state import HouseholdState


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


def describe(state: HouseholdState, agent: int, names: list[str] | None = None,
             full_observability: bool = False) -> str:
    """What ``agent`` (an index) observes now, as a few lines of text."""
    scene = state.scene
    lay = scene.layout
    label = (lambda a: names[a]) if names else (lambda a: f"agent_{a}")
    cell = state.agent_pos[agent]
    view = scene.view_of_cell[cell]
    here = scene.view_rooms(view)
    rooms = range(len(lay.rooms)) if full_observability else here
    where = " and ".join(lay.rooms[r] for r in here)
    where = f"in the doorway between the {where}" if len(here) > 1 else f"in the {where}"
    held = ", ".join(scene.objects[o] for o in state.hands[agent]) or "nothing"
    lines = [f"You are {label(agent)}, {where}. You hold: {held}."]
    room_of = scene.room_of_cell
    for r in rooms:
        furniture = "; ".join(_furniture_line(state, f) for f in scene.furniture_in_room[r])
        lines.append(f"In the {lay.rooms[r]}: {furniture or 'no furniture'}.")
        others = [a for a, c in enumerate(state.agent_pos)
                  if a != agent and (room_of[c] == r or scene.view_of_cell[c] == view)]
        if others:
            lines.append(f"Also in the {lay.rooms[r]}: {', '.join(label(a) for a in others)}.")
    doors = []
    for d, door in enumerate(lay.doors):
        if set(door.rooms) & set(here):
            to = [lay.rooms[x] for x in door.rooms if x not in here] or list(lay.rooms[x]
                                                                             for x in door.rooms)
            doors.append(f"to the {to[0]} ({'open' if state.door_open[d] else 'closed'})")
    if doors:
        lines.append(f"Doors: {', '.join(doors)}.")
    return "\n".join(lines)


def describe_goal(state: HouseholdState) -> str:
    """The goal with progress, e.g. ``ON(cupcake, coffee_table): 2 (1 done)``."""
    parts = [f"{p} ({have} done)" for p, have in zip(state.scene.goal, state.progress)]
    return "; ".join(parts)
