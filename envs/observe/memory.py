"""Per-agent memory: what one agent has observed (or heard), never hidden state.

An :class:`AgentMemory` starts knowing only the floor plan's room names (a house
map) and the agent's own hands. Each tick :meth:`AgentMemory.update` adds what
the agent observes under exactly the env's visibility rule: the room it stands
in (in a doorway, both rooms), the furniture there with its open/closed state,
the contents of surfaces and *open* containers, and the objects held by agents
in view. A closed container keeps its last observed contents as a belief.
:meth:`AgentMemory.note_object` adds information heard from teammates.

Beliefs can be stale: an object seen on the kitchen table stays believed there
until the agent looks at the table again (or hears otherwise).

A team's memories are updated together by :func:`update_all` on one :class:`Sight`
of the tick's state: what each view shows is worked out once for all of them
(a 256-agent team stands in a few dozen views).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from orgteams.envs.core.state import HouseholdState, Scene


@dataclass
class FurnitureBelief:
    """What the agent last saw of one piece of furniture."""

    name: str
    type: str
    room: str
    is_container: bool
    open: bool
    contents: tuple[str, ...] | None  # None: a container never seen open
    last_seen: int

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "room": self.room,
                "is_container": self.is_container, "open": self.open,
                "contents": None if self.contents is None else list(self.contents),
                "last_seen": self.last_seen}


@dataclass(frozen=True)
class ObjectBelief:
    """Where an object was last seen (or heard to be)."""

    location: str  # a furniture name or an agent name
    kind: str  # "furniture" | "agent"
    tick: int
    source: str  # "seen" | "heard"

    def to_dict(self) -> dict:
        return {"location": self.location, "kind": self.kind, "tick": self.tick,
                "source": self.source}


class Views:
    """A scene's views as the memories read them, worked out once per episode: each
    view's room names and furniture, and from which views an agent at a cell is seen
    (the env's visibility rule: an agent in a view's rooms, or in the view's doorway)."""

    def __init__(self, scene: Scene, agent_names: list[str]):
        lay = scene.layout
        self.scene, self.agent_names = scene, agent_names
        count = len(lay.rooms) + len(lay.doors)
        self.rooms = [scene.view_rooms(v) for v in range(count)]
        self.room_names = [tuple(lay.rooms[r] for r in rooms) for rooms in self.rooms]
        self.furniture = [tuple(f for r in rooms for f in scene.furniture_in_room[r])
                          for rooms in self.rooms]
        with_room: list[list[int]] = [[] for _ in lay.rooms]
        for v, rooms in enumerate(self.rooms):
            for r in rooms:
                with_room[r].append(v)
        self._with_room = with_room
        self._seen_from: dict[int, tuple[int, ...]] = {}

    def seen_from(self, cell: int) -> tuple[int, ...]:
        """The views from which an agent standing at ``cell`` is seen."""
        views = self._seen_from.get(cell)
        if views is None:
            room = self.scene.room_of_cell_list[cell]
            views = set(self._with_room[room]) if room >= 0 else set()
            views.add(self.scene.view_of_cell[cell])
            views = self._seen_from[cell] = tuple(sorted(views))
        return views

    def shows(self, view: int, cell: int) -> bool:
        """Whether an agent standing at ``cell`` is seen from ``view``."""
        return view in self.seen_from(cell)


class Sight:
    """What each view shows in one ``state``, worked out once for all the memories
    updated on it: a 256-agent team's memories stand in a few dozen views, and each
    would otherwise name the same furniture's contents and the same holders' objects.

    It only reads ``state`` (the memories record what it lists as the plain rule would
    per memory: tests/envs/observe/test_memory.py compares them on random states), and
    the :class:`ObjectBelief` it hands every memory that sees an object at one place
    is one frozen value, so sharing it shares no state.
    """

    def __init__(self, state: HouseholdState, views: Views):
        self.state, self.views = state, views
        self.holders = [a for a, h in enumerate(state.hands) if h]  # index order
        # view -> the holders seen from it, in index order: a few holders, each seen
        # from a few views, rather than every view asking after every holder
        in_view: dict[int, list[int]] = {}
        pos = state.agent_pos
        for a in self.holders:
            for v in views.seen_from(pos[a]):
                in_view.setdefault(v, []).append(a)
        self.in_view = in_view
        self._furniture: dict[int, tuple] = {}
        # view -> its furniture as seen now (furniture()), made when a memory there
        # first asks
        self.seen_in: dict[int, list[tuple]] = {}
        self._holding: dict[int, tuple[str, set[str], ObjectBelief]] = {}

    def furniture(self, f: int) -> tuple:
        """``(f, name, open, contents, their set, the belief each is seen with)`` of
        furniture ``f``; contents (and the rest) None where it is closed, the belief
        None where it holds nothing."""
        seen = self._furniture.get(f)
        if seen is None:
            state = self.state
            name = state.scene.layout.furniture[f].name
            if state.container_open[f]:
                inside = state.contents[f]
                names = state.scene.objects
                contents = tuple(names[o] for o in inside) if inside else ()
                # most open furniture holds nothing: no object to hand a belief (a frozen
                # dataclass, slow to make: a crowd sees a hundred pieces a tick)
                seen = (f, name, True, contents, set(contents),
                        ObjectBelief(name, "furniture", state.tick, "seen") if contents
                        else None)
            else:
                seen = (f, name, False, None, None, None)
            self._furniture[f] = seen
        return seen

    def holding(self, agent: int) -> tuple[str, set[str], ObjectBelief]:
        """``agent``'s name, the names of the objects it holds, and the belief each is
        seen with."""
        held = self._holding.get(agent)
        if held is None:
            state = self.state
            names = state.scene.objects
            name = self.views.agent_names[agent]
            held = self._holding[agent] = (
                name, {names[o] for o in state.hands[agent]},
                ObjectBelief(name, "agent", state.tick, "seen"))
        return held

    def new_belief(self, f: int) -> FurnitureBelief:
        """A fresh belief on furniture ``f``, first seen now (each memory owns its own)."""
        scene, state = self.state.scene, self.state
        spec = scene.layout.furniture[f]
        return FurnitureBelief(spec.name, spec.type, scene.layout.rooms[spec.room],
                               scene.is_container[f], state.container_open[f], None,
                               state.tick)


def update_all(memories: Iterable[AgentMemory], state: HouseholdState, sight: Sight) -> None:
    """Record in each of ``memories`` what its agent observes in ``state`` (the env's
    visibility rule), in their order; ``sight``: a :class:`Sight` of ``state``.

    One loop over a team's memories rather than a call per memory: 256 memories a
    tick, each seeing a few pieces of furniture, so what is the same for all (the
    state's lists, the scene's tables, each view's furniture) is looked up once.
    """
    scene = state.scene
    views = sight.views
    view_of, room_of, room_names = scene.view_of_cell, scene.room_of_cell_list, scene.layout.rooms
    names = scene.objects
    pos, hands_of = state.agent_pos, state.hands
    tick = state.tick
    in_view = sight.in_view
    seen_in = sight.seen_in
    for mem in memories:
        mem.version += 1
        mem.tick = tick
        me = mem.agent
        cell = pos[me]
        view = view_of[cell]
        room = room_of[cell]
        mem.room = room_names[room] if room >= 0 else ""
        hands = hands_of[me]
        objects = mem.objects
        if hands:  # most hold nothing
            mem.held = tuple(names[o] for o in hands)
            for o in mem.held:
                mem._see(o, mem.name, "agent")
        else:
            mem.held = ()
        # Only agents in view that hold something, or that it believes hold something,
        # change what it knows (an empty-handed agent nothing is believed on is
        # forgotten at and seen with nothing): those, in index order, not all 256 of a
        # crowd 256 times a tick. Beliefs on agents not yet looked at only go (another
        # agent is seen holding the object), so the candidates are taken once, here.
        believed = None
        if mem._on_agents:  # most of a crowd believe no object held (none to look for)
            for b in objects.values():
                if b.kind == "agent":
                    if believed is None:
                        believed = set()
                    believed.add(b.location)
            mem._on_agents = believed is not None
        look = in_view.get(view, ())  # the holders in view, in index order
        if believed is not None:
            # and those believed to hold something that now hold nothing, where in view
            # (a believed holder still holding is among the holders in view, or out of it)
            index = mem._agent_index()
            gone = [a for a in map(index.__getitem__, believed)
                    if not hands_of[a] and views.shows(view, pos[a])]
            if gone:
                look = sorted([*look, *gone])
        for a in look:
            if a != me:
                name, keep, belief = sight.holding(a)
                mem._forget_at(name, keep=keep)
                for o in keep:
                    objects[o] = belief
                if keep:
                    mem._on_agents = True
        rooms_seen = mem.rooms_seen
        for r in views.room_names[view]:
            rooms_seen[r] = tick
        furniture = mem.furniture
        seen = seen_in.get(view)
        if seen is None:
            seen = seen_in[view] = [sight.furniture(f) for f in views.furniture[view]]
        for f, name, is_open, contents, keep, belief in seen:
            fb = furniture.get(name)
            if fb is None:
                fb = furniture[name] = sight.new_belief(f)
            fb.open, fb.last_seen = is_open, tick
            if is_open:
                if fb.contents != contents:
                    # Seen with the contents it was believed to hold, nothing is believed
                    # there besides them (what is heard or seen there joins the contents,
                    # what leaves is dropped from them): nothing to forget (256 agents a tick).
                    fb.contents = contents
                    mem._forget_at(name, keep=keep)
                for o in contents:
                    objects[o] = belief


class Notes:
    """What a team's memories check heard notes against, and the beliefs notes make,
    for one scene and one list of agent names (:meth:`AgentMemory.note_object`).

    A report is heard by many teammates (256 in a crowd, each noting the same place
    and tick): the :class:`ObjectBelief` it makes is one frozen value, made once and
    handed to each (so sharing it shares no state), and the names are sets.
    """

    MAX_KEPT = 4096  # beliefs kept (places x ticks); forgotten all at once past it

    def __init__(self, scene: Scene, agent_index: dict[str, int]) -> None:
        self.objects = frozenset(scene.objects)
        self._furniture = frozenset(f.name for f in scene.layout.furniture)
        self._agents = agent_index  # agent name -> index (not the list: 256 names)
        self._heard: dict[tuple[str, int], ObjectBelief] = {}

    def heard(self, location: str, tick: int) -> ObjectBelief:
        """The belief a note that an object is at ``location`` (a furniture or agent
        name) as of ``tick`` makes; ValueError for any other name."""
        key = (location, tick)
        belief = self._heard.get(key) if type(tick) is int else None  # else: not kept
        if belief is None:
            if location in self._furniture:
                kind = "furniture"
            elif location in self._agents:
                kind = "agent"
            else:
                raise ValueError(f"unknown location {location!r}: expected a furniture or "
                                 "agent name")
            belief = ObjectBelief(location, kind, tick, "heard")
            if type(tick) is int:
                if len(self._heard) >= self.MAX_KEPT:
                    self._heard.clear()
                self._heard[key] = belief
        return belief


class AgentMemory:
    """Beliefs of one agent (index ``agent``) about one episode's ``scene``."""

    def __init__(self, scene: Scene, agent: int, agent_names: list[str] | None = None,
                 agent_index: dict[str, int] | None = None, notes: Notes | None = None):
        """``agent_index``: agent name -> index in ``agent_names``, and ``notes``: the
        :class:`Notes` of ``scene`` and those names, which a team's memories may share
        (else built here when first needed)."""
        self.scene = scene
        self.agent = agent
        self.agent_names = agent_names or [f"agent_{i}" for i in range(scene.num_agents)]
        self.name = self.agent_names[agent]
        lay = scene.layout
        self.rooms: tuple[str, ...] = lay.rooms  # the floor plan is known from the start
        self.rooms_seen: dict[str, int] = {}  # room -> last tick seen
        self.furniture: dict[str, FurnitureBelief] = {}
        self.objects: dict[str, ObjectBelief] = {}
        self.held: tuple[str, ...] = ()
        self.tick = 0
        self.room = ""  # the room the agent is in ("" in a doorway)
        self.version = 0  # counts updates and notes: what was derived from it is stale
        self._index = agent_index  # agent name -> index
        self._notes = notes
        # False: no belief in objects is on an agent (set where one is written, cleared
        # where update_all finds none), so that it need not look at every belief
        self._on_agents = False
        self._views: Views | None = None  # made when first updated alone

    # ---- updates ----
    def update(self, state: HouseholdState, sight: Sight | None = None) -> None:
        """Record what the agent observes in ``state`` (the env's visibility rule).

        ``sight``: a :class:`Sight` of ``state``, where the caller updates many memories
        on one state (see :func:`update_all`; else made here for this one).
        """
        if sight is None:
            if self._views is None:
                self._views = Views(self.scene, self.agent_names)
            sight = Sight(state, self._views)
        update_all((self,), state, sight)

    def _agent_index(self) -> dict[str, int]:
        if self._index is None:  # built when first needed (a crowd has 256 memories)
            self._index = {n: i for i, n in enumerate(self.agent_names)}
        return self._index

    def _see(self, obj: str, location: str, kind: str) -> None:
        self.objects[obj] = ObjectBelief(location, kind, self.tick, "seen")
        if kind == "agent":
            self._on_agents = True

    def _forget_at(self, location: str, keep: set[str]) -> None:
        """Objects believed at ``location`` but not seen there now: whereabouts unknown."""
        for obj in [o for o, b in self.objects.items() if b.location == location and o not in keep]:
            del self.objects[obj]
            if location in self.furniture:
                self._drop_from_contents(location, obj)

    def _drop_from_contents(self, furniture: str, obj: str) -> None:
        belief = self.furniture.get(furniture)
        if belief is not None and belief.contents and obj in belief.contents:
            belief.contents = tuple(o for o in belief.contents if o != obj)

    def note_object(self, obj: str, location: str, tick: int | None = None) -> None:
        """Record heard information: ``obj`` is at ``location`` (furniture or agent name).

        Ignored when the agent's own information about ``obj`` is newer.
        """
        self.version += 1
        notes = self._notes
        if notes is None:
            notes = self._notes = Notes(self.scene, self._agent_index())
        if obj not in notes.objects:
            raise ValueError(f"unknown object {obj!r}")
        heard = notes.heard(location, self.tick if tick is None else tick)
        objects = self.objects
        old = objects.get(obj)
        if old is not None:  # most notes repeat where it was believed, heard again
            if old.tick > heard.tick:
                return
            if old.location != location and old.kind == "furniture":
                self._drop_from_contents(old.location, obj)
        objects[obj] = heard
        if heard.kind == "agent":  # no furniture of that name (furniture names go first)
            self._on_agents = True
            return
        belief = self.furniture.get(location)
        if belief is not None and belief.contents is not None and obj not in belief.contents:
            belief.contents = belief.contents + (obj,)

    # ---- queries ----
    def location_of(self, obj: str) -> str | None:
        belief = self.objects.get(obj)
        return belief.location if belief else None

    def containers_unobserved(self, room: str) -> list[str]:
        """Containers of a seen room whose contents this agent has never seen."""
        return [b.name for b in self.furniture.values()
                if b.room == room and b.is_container and b.contents is None]

    def room_explored(self, room: str) -> bool:
        """Seen, and every container in it has been seen open at least once."""
        return room in self.rooms_seen and not self.containers_unobserved(room)

    def render_text(self) -> str:
        """The belief of where things are, as a few lines for a prompt."""
        seen = ", ".join(r for r in self.rooms if r in self.rooms_seen) or "none"
        unseen = ", ".join(r for r in self.rooms if r not in self.rooms_seen) or "none"
        lines = [f"Rooms seen: {seen}; not yet seen: {unseen}."]
        lines.append(f"You hold: {', '.join(self.held) or 'nothing'}.")
        for room in self.rooms:
            parts = []
            for b in self.furniture.values():
                if b.room != room:
                    continue
                if b.contents is None:
                    parts.append(f"{b.name} (closed, contents unknown)")
                elif b.contents:
                    parts.append(f"{b.name} ({', '.join(b.contents)})")
            if parts:
                lines.append(f"{room}: {'; '.join(parts)}.")
        carried = [f"{o} (held by {b.location})" for o, b in sorted(self.objects.items())
                   if b.kind == "agent" and b.location != self.name]
        if carried:
            lines.append(f"Carried by others: {', '.join(carried)}.")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"agent": self.name, "tick": self.tick, "room": self.room,
                "rooms_seen": dict(self.rooms_seen), "held": list(self.held),
                "furniture": {k: v.to_dict() for k, v in self.furniture.items()},
                "objects": {k: v.to_dict() for k, v in self.objects.items()}}


__all__ = ["AgentMemory", "FurnitureBelief", "Notes", "ObjectBelief", "Sight", "Views",
           "update_all"]
