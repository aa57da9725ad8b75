"""The array observation written plainly: slice, mask, encode. The oracle of the fast path.

:class:`~orgteams.envs.observe.array_obs.ArrayObserver` builds observations with caches,
preallocated buffers and per-team-size shortcuts. This module computes the same
encoding (documented in :mod:`orgteams.envs.observe.array_obs`) the obvious way, one agent
at a time, so a differential test can check the fast path against it over random
episodes. It is slow on purpose; nothing else uses it.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.core.catalog import load_catalog, room_type
from orgteams.envs.core.layout import DOOR, FLOOR, WALL
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.observe.array_obs import (
    BASE_CHANNELS,
    MAX_GOAL,
    T_CLOSED,
    T_DOOR_CLOSED,
    T_FLOOR,
    T_SURFACE,
    T_WALL,
)

__all__ = ["reference_observation"]


def reference_observation(state: HouseholdState, agent: int, view_radius: int,
                          full_observability: bool = False) -> dict[str, np.ndarray]:
    """The observation of agent index ``agent``: ``image``, ``hands`` and ``goal``."""
    scene, cat = state.scene, load_catalog()
    lay = scene.layout
    h, w, r = lay.height, lay.width, view_radius
    cls = [cat.class_id(c) for c in scene.object_class]
    # 1. The whole house, every cell encoded.
    house = np.zeros((h, w, BASE_CHANNELS + len(cat.object_classes)), np.uint8)
    for y in range(h):
        for x in range(w):
            tile = lay.tiles[y, x]
            house[y, x, 0] = {FLOOR: T_FLOOR, WALL: T_WALL, DOOR: T_DOOR_CLOSED}.get(tile, 0)
            if lay.room_map[y, x] >= 0:
                name = lay.rooms[lay.room_map[y, x]]
                house[y, x, 1] = list(cat.room_colors).index(room_type(name)) + 1
    for d, door in enumerate(lay.doors):
        house[door.cell + (0,)] = T_DOOR_CLOSED + state.door_open[d]
    for f, furniture in enumerate(lay.furniture):
        is_open = state.container_open[f]
        house[furniture.cell + (0,)] = T_CLOSED + is_open if scene.is_container[f] \
            else T_SURFACE
        house[furniture.cell + (3,)] = cat.furniture_type_id(furniture.type) + 1
        if is_open:  # surfaces are always open; closed containers hide their contents
            for o in state.contents[f]:
                house[furniture.cell + (BASE_CHANNELS + cls[o],)] += 1
    for a, cell in enumerate(state.agent_pos):
        y, x = divmod(cell, w)
        house[y, x, 2] = 1 if a == agent else 2
        for o in state.hands[a]:
            house[y, x, BASE_CHANNELS + cls[o]] += 1
    # 2. What the agent sees: its room (both rooms in a doorway), grown by one cell so
    # the walls and doors around it show; everything with full observability.
    me = state.agent_pos[agent]
    rooms = scene.view_rooms(scene.view_of_cell[me])
    seen = np.ones((h, w), bool) if full_observability else np.isin(lay.room_map, rooms)
    grown = seen.copy()
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            grown |= np.roll(np.roll(_pad(seen), dy, 0), dx, 1)[1:-1, 1:-1]
    house[~grown] = 0
    # 3. The (2r+1)^2 window centred on the agent; outside the house is zero.
    y0, x0 = divmod(me, w)
    image = np.zeros((2 * r + 1, 2 * r + 1, house.shape[2]), np.uint8)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            y, x = y0 + dy, x0 + dx
            if 0 <= y < h and 0 <= x < w:
                image[dy + r, dx + r] = house[y, x]
    hands = np.zeros(HAND_CAPACITY, np.uint8)
    for slot, o in enumerate(state.hands[agent]):
        hands[slot] = cls[o] + 1
    goal = np.zeros((MAX_GOAL, 3), np.uint8)
    for i, (pred, have) in enumerate(zip(scene.goal, state.progress)):
        goal[i] = (cat.class_id(pred.cls) + 1, cat.furniture_type_id(pred.target) + 1,
                   pred.count - have)
    return {"image": image, "hands": hands, "goal": goal}


def _pad(mask: np.ndarray) -> np.ndarray:
    """``mask`` with a one-cell False border (so growing it never wraps around)."""
    return np.pad(mask, 1)
