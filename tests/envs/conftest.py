"""Builders for tiny inline households and hand-made states, shared by the env tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from orgteams.envs.core.layout import Layout
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.core.tasks import Predicate

# Two rooms joined by a closed door at (2, 4); a fridge and a table in the kitchen,
# a sofa in the living room.
#   col 0123456789
TWO_ROOMS = [
    "##########",  # row 0
    "#Fkk#llll#",  # row 1
    "#kkk+lllS#",  # row 2
    "#kkT#llll#",  # row 3
    "##########",  # row 4
]
TWO_ROOMS_LEGEND = {"k": "kitchen", "l": "living_room"}
TWO_ROOMS_FURNITURE = {"F": "fridge", "T": "kitchen_table", "S": "sofa"}


def _inline_layout(lines: Sequence[str], rooms: dict[str, str] | None = None,
                  furniture: dict[str, str] | None = None) -> Layout:
    """An inline layout that need not have the four required rooms."""
    return Layout.from_grid(list(lines), rooms or {"k": "kitchen"}, furniture or {},
                            require_rooms=False)


def _make_state(layout: Layout, agents: Sequence[tuple[int, int]],
               contents: dict[str, Sequence[str]] | None = None,
               hands: Sequence[Sequence[str]] | None = None,
               goal: Sequence[Predicate] = (), opened: Sequence[str] = (),
               doors_open: Sequence[bool] | None = None, tick: int = 0,
               step_limit: int = 100) -> HouseholdState:
    """A state with agents at ``(row, col)`` cells and objects named by stable id.

    ``contents`` maps furniture names to object ids on/in them; ``hands`` lists each
    agent's held object ids; containers named in ``opened`` start open.
    """
    contents = dict(contents or {})
    hands = [list(h) for h in (hands or [[] for _ in agents])]
    names = [f.name for f in layout.furniture]
    unknown = set(contents) - set(names)
    if unknown:
        raise KeyError(f"no furniture {sorted(unknown)} in {names}")
    objects = [o for n in names for o in contents.get(n, ())] + [o for h in hands for o in h]
    index = {o: i for i, o in enumerate(objects)}
    scene = Scene(layout, "inline", tuple(goal), tuple(objects), len(agents), step_limit)
    w = layout.width
    return HouseholdState(
        scene=scene, tick=tick, agent_pos=[r * w + c for r, c in agents],
        hands=[tuple(index[o] for o in h) for h in hands],
        contents=[tuple(index[o] for o in contents.get(n, ())) for n in names],
        container_open=[not scene.is_container[i] or n in opened for i, n in enumerate(names)],
        door_open=list(doors_open if doors_open is not None
                       else [d.initially_open for d in layout.doors]))


def _where_is(state: HouseholdState, obj_name: str) -> tuple[str, str]:
    """``("agent", "0")`` or ``("furniture", "fridge")`` for an object id."""
    kind, i = state.where(state.scene.objects.index(obj_name))
    return kind, str(i) if kind == "agent" else state.scene.layout.furniture[i].name


# Helpers are served as fixtures: each tests/ folder has its own conftest module, so
# importing one by name would be ambiguous.
@pytest.fixture
def inline_layout():
    return _inline_layout


@pytest.fixture
def make_state():
    return _make_state


@pytest.fixture
def where_is():
    return _where_is


@pytest.fixture
def two_rooms() -> Layout:
    return _inline_layout(TWO_ROOMS, TWO_ROOMS_LEGEND, TWO_ROOMS_FURNITURE)
