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
"""

from __future__ import annotations

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


@dataclass
class ObjectBelief:
    """Where an object was last seen (or heard to be)."""

    location: str  # a furniture name or an agent name
    kind: str  # "furniture" | "agent"
    tick: int
    source: str  # "seen" | "heard"

    def to_dict(self) -> dict:
        return {"location": self.location, "kind": self.kind, "tick": self.tick,
                "source": self.source}


class AgentMemory:
    """Beliefs of one agent (index ``agent``) about one episode's ``scene``."""

    def __init__(self, scene: Scene, agent: int, agent_names: list[str] | None = None,
                 agent_index: dict[str, int] | None = None):
        """``agent_index``: agent name -> index in ``agent_names``, which a team's
        memories may share (else built here when first needed)."""
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
        self._furniture_type = {f.name: f.type for f in lay.furniture}
        self.version = 0  # counts updates and notes: what was derived from it is stale
        self._index = agent_index  # agent name -> index

    # ---- updates ----
    def update(self, state: HouseholdState, holders: list[int] | None = None) -> None:
        """Record what the agent observes in ``state`` (the env's visibility rule).

        ``holders``: the indices of the agents holding something in ``state``, in
        order, where the caller updates many memories on one state (else found here).
        """
        self.version += 1
        scene = self.scene
        lay = scene.layout
        names = scene.objects
        self.tick = state.tick
        cell = state.agent_pos[self.agent]
        view = scene.view_of_cell[cell]
        visible = scene.view_rooms(view)
        room = scene.room_of_cell_list[cell]  # an int of a list: 256 memories a tick
        self.room = lay.rooms[room] if room >= 0 else ""
        hands = state.hands[self.agent]
        self.held = tuple(names[o] for o in hands) if hands else ()  # most hold nothing
        for o in self.held:
            self._see(o, self.name, "agent")
        # Only agents in view that hold something, or that it believes hold something,
        # change what it knows (an empty-handed agent nothing is believed on is
        # forgotten at and seen with nothing): those, in index order, not all 256 of a
        # crowd 256 times a tick. Beliefs on agents not yet looked at only go (another
        # agent is seen holding the object), so the candidates are taken once, here.
        if holders is None:
            holders = [a for a, h in enumerate(state.hands) if h]
        look = set(holders)
        index = None
        for b in self.objects.values():
            if b.kind == "agent":
                if index is None:
                    index = self._agent_index()
                look.add(index[b.location])
        look.discard(self.agent)
        room_of, view_of = scene.room_of_cell_list, scene.view_of_cell  # ints: 256 agents
        pos = state.agent_pos
        for a in sorted(look):
            c = pos[a]
            if room_of[c] in visible or view_of[c] == view:
                held = {names[o] for o in state.hands[a]}
                self._forget_at(self.agent_names[a], keep=held)
                for o in held:
                    self._see(o, self.agent_names[a], "agent")
        for r in visible:
            self.rooms_seen[lay.rooms[r]] = state.tick
            for f in scene.furniture_in_room[r]:
                self._see_furniture(state, f)

    def _agent_index(self) -> dict[str, int]:
        if self._index is None:  # built when first needed (a crowd has 256 memories)
            self._index = {n: i for i, n in enumerate(self.agent_names)}
        return self._index

    def _see_furniture(self, state: HouseholdState, f: int) -> None:
        scene = self.scene
        spec = scene.layout.furniture[f]
        is_open = state.container_open[f]
        belief = self.furniture.get(spec.name)
        if belief is None:
            belief = self.furniture[spec.name] = FurnitureBelief(
                spec.name, spec.type, scene.layout.rooms[spec.room], scene.is_container[f],
                is_open, None, state.tick)
        belief.open, belief.last_seen = is_open, state.tick
        if is_open:
            inside = state.contents[f]
            contents = tuple(scene.objects[o] for o in inside) if inside else ()
            if belief.contents != contents:
                # Seen with the contents it was believed to hold, nothing is believed
                # there besides them (what is heard or seen there joins the contents, what
                # leaves is dropped from them): nothing to forget (256 agents a tick).
                belief.contents = contents
                self._forget_at(spec.name, keep=set(contents))
            for o in contents:
                self._see(o, spec.name, "furniture")

    def _see(self, obj: str, location: str, kind: str) -> None:
        self.objects[obj] = ObjectBelief(location, kind, self.tick, "seen")

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
        if obj not in self.scene.objects:
            raise ValueError(f"unknown object {obj!r}")
        if location in self._furniture_type:
            kind = "furniture"
        elif location in self._agent_index():  # not the list: 256 names in a crowd
            kind = "agent"
        else:
            raise ValueError(f"unknown location {location!r}: expected a furniture or agent name")
        tick = self.tick if tick is None else tick
        old = self.objects.get(obj)
        if old is not None and old.tick > tick:
            return
        if old is not None and old.kind == "furniture" and old.location != location:
            self._drop_from_contents(old.location, obj)
        self.objects[obj] = ObjectBelief(location, kind, tick, "heard")
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


__all__ = ["AgentMemory", "FurnitureBelief", "ObjectBelief"]
