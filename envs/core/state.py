"""World state: a static :class:`Scene` per episode and a small mutable-free state.

``Scene`` holds what never changes within an episode (layout, objects, goal, and
lookup tables derived once for speed). ``HouseholdState`` holds what changes:
agent cells, hands, furniture contents, open/closed flags. Each object is in
exactly one place: in one furniture's ``contents`` or in one agent's ``hands``.
Cells are flat indices ``row * width + col`` so that moving is one addition.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import DIRECTIONS, DOOR, FLOOR, Layout
from orgteams.envs.core.tasks import Predicate


def _per_layout(func):
    """A ``cached_property`` of :class:`Scene` that depends on the layout alone: computed
    once per layout and shared by the Scene of every episode on it (each reset builds a
    new Scene). The values are treated as read-only."""
    name = func.__name__

    @functools.wraps(func)
    def get(scene: Scene):
        tables = scene.layout.__dict__.setdefault("_scene_tables", {})
        if name not in tables:
            tables[name] = func(scene)
        return tables[name]

    return cached_property(get)


@dataclass(frozen=True, eq=False)
class Scene:
    """Everything static in one episode: the layout, its objects and the goal."""

    layout: Layout
    task: str
    goal: tuple[Predicate, ...]
    objects: tuple[str, ...]  # stable ids, e.g. "cupcake_2"
    num_agents: int
    step_limit: int

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scene) and self.to_dict() == other.to_dict()

    __hash__ = object.__hash__

    def to_dict(self) -> dict:
        """The scene (layout, task, goal, objects, team size, tick limit) as plain JSON data."""
        return {"layout": self.layout.to_dict(), "task": self.task,
                "goal": [p.to_dict() for p in self.goal], "objects": list(self.objects),
                "num_agents": self.num_agents, "step_limit": self.step_limit}

    @classmethod
    def from_dict(cls, d: dict) -> Scene:
        """The scene that :meth:`to_dict` wrote."""
        return cls(Layout.from_dict(d["layout"]), d["task"],
                   tuple(Predicate(**p) for p in d["goal"]), tuple(d["objects"]),
                   d["num_agents"], d["step_limit"])

    # ---- derived lookup tables (computed once per scene) ----
    @cached_property
    def width(self) -> int:
        return self.layout.width

    @cached_property
    def object_class(self) -> tuple[str, ...]:
        return tuple(o.rpartition("_")[0] for o in self.objects)

    @_per_layout
    def deltas(self) -> tuple[int, int, int, int]:
        w = self.width
        return tuple(dr * w + dc for dr, dc in DIRECTIONS)

    @_per_layout
    def floor(self) -> bytes:
        """floor[cell] == 1 where an agent may always stand (doors depend on state)."""
        return bytes((self.layout.tiles.ravel() == FLOOR).astype(np.uint8))

    @_per_layout
    def door_at(self) -> dict[int, int]:
        w = self.width
        return {r * w + c: i for i, d in enumerate(self.layout.doors) for r, c in [d.cell]}

    @_per_layout
    def furniture_at(self) -> dict[int, int]:
        w = self.width
        return {f.cell[0] * w + f.cell[1]: i for i, f in enumerate(self.layout.furniture)}

    @_per_layout
    def is_container(self) -> tuple[bool, ...]:
        cat = load_catalog().furniture
        return tuple(cat[f.type].is_container for f in self.layout.furniture)

    @_per_layout
    def capacity(self) -> tuple[int, ...]:
        cat = load_catalog().furniture
        return tuple(cat[f.type].capacity for f in self.layout.furniture)

    @_per_layout
    def room_of_cell(self) -> np.ndarray:
        return self.layout.room_map.ravel()

    @_per_layout
    def room_of_cell_list(self) -> list[int]:
        """:attr:`room_of_cell` as Python ints: what per-agent loops read (an item of
        a list is read several times faster than one of an array)."""
        return self.room_of_cell.tolist()

    @cached_property
    def goal_counts(self) -> tuple[int, ...]:
        """Units each goal predicate needs (``p.count`` per predicate)."""
        return tuple(p.count for p in self.goal)

    @cached_property
    def goal_targets(self) -> tuple[frozenset[int], ...]:
        """Per goal predicate, the furniture indices that satisfy its target."""
        of_type = self.furniture_of_type
        return tuple(of_type.get(p.target, frozenset()) for p in self.goal)

    @_per_layout
    def furniture_of_type(self) -> dict[str, frozenset[int]]:
        """Furniture type -> the indices of the layout's furniture of that type."""
        out: dict[str, set[int]] = {}
        for i, f in enumerate(self.layout.furniture):
            out.setdefault(f.type, set()).add(i)
        return {t: frozenset(ids) for t, ids in out.items()}

    @_per_layout
    def view_of_cell(self) -> dict[int, int]:
        """Standing cell -> view id: the room id, or ``num_rooms + door id`` in a doorway."""
        rooms = len(self.layout.rooms)
        views = {c: int(r) for c, r in enumerate(self.room_of_cell) if r >= 0}
        views.update({c: rooms + d for c, d in self.door_at.items()})
        return views

    def view_rooms(self, view: int) -> tuple[int, ...]:
        """Rooms visible from a view: one room, or both rooms a door joins."""
        rooms = len(self.layout.rooms)
        return (view,) if view < rooms else self.layout.doors[view - rooms].rooms

    @_per_layout
    def furniture_in_room(self) -> tuple[tuple[int, ...], ...]:
        out: list[list[int]] = [[] for _ in self.layout.rooms]
        for i, f in enumerate(self.layout.furniture):
            out[f.room].append(i)
        return tuple(tuple(x) for x in out)

    @_per_layout
    def doors_of_room(self) -> tuple[tuple[int, ...], ...]:
        """Per room, the indices of the doors in its walls (ascending)."""
        out: list[list[int]] = [[] for _ in self.layout.rooms]
        for i, d in enumerate(self.layout.doors):
            for r in dict.fromkeys(d.rooms):
                out[r].append(i)
        return tuple(tuple(x) for x in out)

    @_per_layout
    def view_array(self) -> np.ndarray:
        """``view_of_cell`` as an array over flat cells (-1 where no one can stand)."""
        views = np.full(self.layout.height * self.layout.width, -1, np.int64)
        for cell, view in self.view_of_cell.items():
            views[cell] = view
        return views

    @_per_layout
    def floor_cells(self) -> np.ndarray:
        return np.flatnonzero(np.frombuffer(self.floor, dtype=np.uint8))


@dataclass(eq=False)
class HouseholdState:
    """The dynamic part of the world. Treat as immutable: ``transition`` returns a new one."""

    scene: Scene
    tick: int
    agent_pos: list[int]  # flat cell per agent
    hands: list[tuple[int, ...]]  # object ids per agent, pick order (slot = index)
    contents: list[tuple[int, ...]]  # object ids per furniture, placement order
    container_open: list[bool]  # per furniture (surfaces are always True)
    door_open: list[bool]  # per door
    progress: tuple[int, ...] = field(default=())  # satisfied units per goal predicate

    def __post_init__(self) -> None:
        if not self.progress:
            self.progress = goal_progress(self)

    def _key(self) -> tuple:
        return (self.tick, tuple(self.agent_pos), tuple(self.hands), tuple(self.contents),
                tuple(self.container_open), tuple(self.door_open))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, HouseholdState) and self._key() == other._key()
                and self.scene == other.scene)

    def agent_cell(self, agent: int) -> tuple[int, int]:
        """Agent ``agent``'s ``(row, column)``."""
        return divmod(self.agent_pos[agent], self.scene.width)

    @property
    def success(self) -> bool:
        # ``progress`` is capped at each predicate's count, so "all met" is one comparison.
        """Whether every goal predicate holds."""
        return self.progress == self.scene.goal_counts

    def where(self, obj: int) -> tuple[str, int]:
        """``("furniture", i)`` or ``("agent", i)`` for an object id."""
        for a, held in enumerate(self.hands):
            if obj in held:
                return "agent", a
        for f, inside in enumerate(self.contents):
            if obj in inside:
                return "furniture", f
        raise ValueError(f"object {obj} is nowhere: state is corrupt")

    def to_dict(self) -> dict:
        """The state as plain JSON data (cells as ``[row, column]``); :meth:`from_dict` reads it
        back.
        """
        return {"scene": self.scene.to_dict(), "tick": self.tick,
                "agent_pos": [list(divmod(p, self.scene.width)) for p in self.agent_pos],
                "hands": [list(h) for h in self.hands],
                "contents": [list(c) for c in self.contents],
                "container_open": list(self.container_open), "door_open": list(self.door_open)}

    @classmethod
    def from_dict(cls, d: dict, scene: Scene | None = None) -> HouseholdState:
        """The state that :meth:`to_dict` wrote; ``scene``: reuse one already read."""
        scene = scene or Scene.from_dict(d["scene"])
        w = scene.width
        return cls(scene, d["tick"], [r * w + c for r, c in d["agent_pos"]],
                   [tuple(h) for h in d["hands"]], [tuple(c) for c in d["contents"]],
                   list(d["container_open"]), list(d["door_open"]))


def goal_progress(state: HouseholdState) -> tuple[int, ...]:
    """Satisfied units per goal predicate (capped at the predicate's count)."""
    scene = state.scene
    classes = scene.object_class
    out = []
    for pred, targets in zip(scene.goal, scene.goal_targets):
        have = sum(1 for f in targets for o in state.contents[f] if classes[o] == pred.cls)
        out.append(min(have, pred.count))
    return tuple(out)


def is_walkable(state: HouseholdState, cell: int) -> bool:
    """Whether an agent may stand on ``cell``: floor, or a door that is open."""
    scene = state.scene
    if scene.floor[cell]:
        return True
    door = scene.door_at.get(cell)
    return door is not None and state.door_open[door]


__all__ = ["Scene", "HouseholdState", "goal_progress", "is_walkable", "DOOR"]
