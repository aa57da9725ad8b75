"""The map as one agent knows it: what a person playing that agent is shown.

Agents observe under one rule (:mod:`orgteams.envs.observe.text`,
:mod:`orgteams.envs.observe.memory`): the room they stand in (in a doorway, both rooms),
its furniture, open or closed, the contents of surfaces and *open* containers, and
the agents there with what they hold. Everything else they know only as they last
saw it, or not at all. :class:`Sight` (``renderer.sight``) makes the window draw
exactly that for one agent, as ``orgteams play`` does by default:

* the rooms in view as they are (a closed container shows no count: its inside is
  not seen);
* rooms seen before under a light veil, their furniture and objects as the agent's
  memory holds them (remembered, possibly stale);
* rooms never seen under a dark veil, without furniture (the floor plan and room
  names are known from the start, as the agents' memory has them);
* doors out of view without their state; other agents out of view not at all (their
  speech reaches the panel's message log, not a bubble).

:func:`known_world` computes that view once per frame; the drawing functions take it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from orgteams.envs.core.state import HouseholdState
from orgteams.envs.observe.memory import AgentMemory

REMEMBERED_VEIL = (235, 235, 240, 120)  # RGBA over rooms seen before (remembered)
UNSEEN_VEIL = (40, 44, 54, 215)  # RGBA over rooms never seen


@dataclass
class Sight:
    """Draw the map as agent ``agent`` (an index) knows it.

    Args:
        agent: The agent whose knowledge is shown (the person's agent).
        memory: Its memory (what it saw before, and heard); None: it remembers nothing,
            only what it sees now is drawn.
    """

    agent: int
    memory: AgentMemory | None = None


@dataclass
class Known:
    """One frame's view of the world through a :class:`Sight`.

    Attributes:
        state: The world to draw on the map: furniture out of view holds what the
            agent remembers of it (contents, open or closed). Its goal progress is the
            real one (the panel's: every agent is told how far the goal is).
        visible_rooms: Rooms in view now.
        seen_rooms: Rooms seen before and not in view: room index -> tick last seen.
        hidden_furniture: Furniture not drawn (in rooms never seen).
        remembered_furniture: Furniture drawn from memory (out of view).
        unknown_doors: Doors out of view (drawn without their state).
        visible_agents: Agents drawn (in view, and the agent itself).
        uncounted: Closed containers whose count of objects is not drawn.
    """

    state: HouseholdState
    visible_rooms: frozenset[int]
    seen_rooms: dict[int, int] = field(default_factory=dict)
    hidden_furniture: frozenset[int] = frozenset()
    remembered_furniture: frozenset[int] = frozenset()
    unknown_doors: frozenset[int] = frozenset()
    visible_agents: frozenset[int] = frozenset()
    uncounted: frozenset[int] = frozenset()

    def sees_agent(self, a: int) -> bool:
        return a in self.visible_agents


def known_world(state: HouseholdState, sight: Sight) -> Known:
    """What ``sight.agent`` knows of ``state`` (see the module docstring)."""
    scene = state.scene
    lay = scene.layout
    cell = state.agent_pos[sight.agent]
    view = scene.view_of_cell[cell]
    visible = frozenset(scene.view_rooms(view))
    room_of, view_of = scene.room_of_cell, scene.view_of_cell
    agents = frozenset(a for a, c in enumerate(state.agent_pos)
                       if a == sight.agent or room_of[c] in visible or view_of[c] == view)
    memory = sight.memory
    beliefs = memory.furniture if memory is not None else {}
    object_id = {name: i for i, name in enumerate(scene.objects)}
    seen_rooms = {}
    if memory is not None:
        index = {name: i for i, name in enumerate(lay.rooms)}
        seen_rooms = {index[r]: t for r, t in memory.rooms_seen.items()
                      if r in index and index[r] not in visible}
    contents = list(state.contents)
    opened = list(state.container_open)
    hidden, remembered, uncounted = set(), set(), set()
    for f, spec in enumerate(lay.furniture):
        if spec.room in visible:
            if scene.is_container[f] and not opened[f]:
                uncounted.add(f)
            continue
        belief = beliefs.get(spec.name)
        if belief is None:
            hidden.add(f)
            contents[f] = ()
            continue
        remembered.add(f)
        opened[f] = belief.open or not scene.is_container[f]
        contents[f] = tuple(object_id[o] for o in belief.contents or () if o in object_id)
        if scene.is_container[f] and not belief.open:
            uncounted.add(f)
    doors = frozenset(d for d, door in enumerate(lay.doors)
                      if not set(door.rooms) & visible)
    drawn = replace(state, contents=contents, container_open=opened)
    return Known(drawn, visible, seen_rooms, frozenset(hidden), frozenset(remembered), doors,
                 agents, frozenset(uncounted))


__all__ = ["Known", "Sight", "known_world"]
