"""Array observations for RL: one pipeline (features, view mask, egocentric crop).

Encoding (``gymnasium.spaces.Dict``), documented in the env docstring too:

* ``image``: ``Box(0, 255, (2r+1, 2r+1, 4 + K), uint8)`` centred on the agent
  (``r`` = ``view_radius``); cells the agent cannot see are all zero. Channels:

  ====  ===========================================================================
  0     tile: 0 unseen, 1 floor, 2 wall, 3 door closed, 4 door open, 5 surface,
        6 container closed, 7 container open
  1     room type id + 1 (catalog order)
  2     agent: 1 self, 2 teammate
  3     furniture type id + 1 (catalog order)
  4+k   number of visible objects of class k here (on a surface, in an open
        container, or held by an agent standing here)
  ====  ===========================================================================

* ``hands``: ``Box(0, 255, (2,), uint8)``: class id + 1 of each held object, 0 if empty.
* ``goal``: ``Box(0, 255, (5, 3), uint8)``: per goal predicate, ``[class id + 1,
  target furniture type id + 1, units still missing]``; unused rows are zero.

An agent sees the room it stands in (in a doorway: both rooms) and the walls and
doors around it; closed containers hide their contents. ``full_observability``
shows the whole house.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from orgteams.envs.actions import HAND_CAPACITY
from orgteams.envs.catalog import load_catalog, room_type
from orgteams.envs.layout import DOOR, FLOOR, WALL
from orgteams.envs.state import HouseholdState, Scene

MAX_GOAL = 5
T_UNSEEN, T_FLOOR, T_WALL, T_DOOR_CLOSED, T_DOOR_OPEN, T_SURFACE, T_CLOSED, T_OPEN = range(8)
BASE_CHANNELS = 4


def observation_space(view_radius: int) -> spaces.Dict:
    """The observation space (identical for every agent and layout)."""
    k = len(load_catalog().object_classes)
    side = 2 * view_radius + 1
    return spaces.Dict({
        "image": spaces.Box(0, 255, (side, side, BASE_CHANNELS + k), np.uint8),
        "hands": spaces.Box(0, 255, (HAND_CAPACITY,), np.uint8),
        "goal": spaces.Box(0, 255, (MAX_GOAL, 3), np.uint8),
    })


class ArrayObserver:
    """Builds array observations for one scene; static parts are computed once."""

    def __init__(self, scene: Scene, view_radius: int, full_observability: bool = False):
        self.scene, self.r, self.full = scene, view_radius, full_observability
        cat = load_catalog()
        lay = scene.layout
        h, w = lay.height, lay.width
        k = len(cat.object_classes)
        base = np.zeros((h, w, BASE_CHANNELS + k), np.uint8)
        tiles = lay.tiles
        base[..., 0] = np.select([tiles == FLOOR, tiles == WALL, tiles == DOOR],
                                 [T_FLOOR, T_WALL, T_DOOR_CLOSED], T_UNSEEN)
        room_types = list(cat.room_colors)
        room_ids = np.array([room_types.index(room_type(n)) + 1 for n in lay.rooms], np.uint8)
        inside = lay.room_map >= 0
        base[..., 1][inside] = room_ids[lay.room_map[inside]]
        for f in lay.furniture:
            base[f.cell + (0,)] = T_SURFACE
            base[f.cell + (3,)] = cat.furniture_type_id(f.type) + 1
        self.base = base.reshape(h * w, -1)
        self.container_cells = np.array([i for i, c in enumerate(scene.is_container) if c], int)
        self.container_flat = np.array([f.cell[0] * w + f.cell[1]
                                        for f in lay.furniture], int)
        self.door_flat = np.array([d.cell[0] * w + d.cell[1] for d in lay.doors], int)
        self.obj_class = np.array([cat.class_id(c) for c in scene.object_class], int)
        self.goal_rows = [(cat.class_id(p.cls) + 1, cat.furniture_type_id(p.target) + 1)
                          for p in scene.goal]
        self._masks: dict[int, np.ndarray] = {}
        self._cache_key: object = None
        self._padded: np.ndarray | None = None

    def view_mask(self, view: int) -> np.ndarray:
        """(H + 2r, W + 2r) bool, padded: the cells visible from a view."""
        if view not in self._masks:
            lay = self.scene.layout
            if self.full:
                mask = np.ones((lay.height, lay.width), bool)
            else:
                mask = np.isin(lay.room_map, self.scene.view_rooms(view))
                # Grow by one cell (3x3) so the walls and doors around the room are seen.
                rows = mask.copy()
                rows[1:] |= mask[:-1]
                rows[:-1] |= mask[1:]
                mask = rows.copy()
                mask[:, 1:] |= rows[:, :-1]
                mask[:, :-1] |= rows[:, 1:]
            self._masks[view] = np.pad(mask, self.r)
        return self._masks[view]

    def _features(self, state: HouseholdState) -> np.ndarray:
        """Padded (H + 2r, W + 2r, C) features of the whole house for this state."""
        key = (id(state), state.tick)
        if key == self._cache_key:
            return self._padded
        lay = self.scene.layout
        feat = self.base.copy()
        if len(self.door_flat):
            feat[self.door_flat, 0] = T_DOOR_CLOSED + np.array(state.door_open, np.uint8)
        if len(self.container_cells):
            opened = np.array(state.container_open, np.uint8)[self.container_cells]
            feat[self.container_flat[self.container_cells], 0] = T_CLOSED + opened
        for a, cell in enumerate(state.agent_pos):
            feat[cell, 2] = 2
            for o in state.hands[a]:
                feat[cell, BASE_CHANNELS + self.obj_class[o]] += 1
        for f, inside in enumerate(state.contents):
            if inside and state.container_open[f]:
                cell = self.container_flat[f]
                for o in inside:
                    feat[cell, BASE_CHANNELS + self.obj_class[o]] += 1
        img = feat.reshape(lay.height, lay.width, -1)
        r = self.r
        self._padded = np.pad(img, ((r, r), (r, r), (0, 0)))
        self._cache_key = key
        return self._padded

    def observe(self, state: HouseholdState, agent: int) -> dict[str, np.ndarray]:
        """The observation of agent index ``agent``."""
        padded = self._features(state)
        row, col = state.agent_cell(agent)
        side = 2 * self.r + 1
        view = self.scene.view_of_cell[state.agent_pos[agent]]
        mask = self.view_mask(view)[row:row + side, col:col + side]
        image = padded[row:row + side, col:col + side] * mask[..., None]
        image[self.r, self.r, 2] = 1
        hands = np.zeros(HAND_CAPACITY, np.uint8)
        for i, o in enumerate(state.hands[agent]):
            hands[i] = self.obj_class[o] + 1
        goal = np.zeros((MAX_GOAL, 3), np.uint8)
        for i, ((cls, target), pred, have) in enumerate(
                zip(self.goal_rows, self.scene.goal, state.progress)):
            goal[i] = (cls, target, pred.count - have)
        return {"image": image, "hands": hands, "goal": goal}
