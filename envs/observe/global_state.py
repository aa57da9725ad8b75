"""The global state for centralized critics (MAPPO, QMIX): ``env.state()``.

One flat ``Box`` (uint8, tight bounds) of the whole house, seen by no agent in
particular, hidden things included (the contents of closed containers):

* per cell (row-major), planes: tile one-hot (7, as in :mod:`orgteams.envs.observe.rl_obs`),
  furniture type one-hot (18), objects per class on/in the furniture there (17, at
  most 8 each), agent index one-hot (one plane per agent);
* per agent and hand slot, the held object's class one-hot (17);
* per goal row, class one-hot, target type one-hot and units still missing (as in
  ``obs_mode="flat"``).

Its size depends on the layout and the number of agents only, so it is fixed for an
env (``env.state_space``).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import FLOOR, WALL, Layout
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.observe.array_obs import MAX_GOAL
from orgteams.envs.observe.rl_obs import MAX_COUNT, TILE_PLANES

# Tile planes: floor, wall, door closed, door open, surface, container closed, open.
_P_FLOOR, _P_WALL, _P_DOOR, _P_SURFACE, _P_CONTAINER = 0, 1, 2, 4, 5


def _sizes() -> tuple[int, int]:
    cat = load_catalog()
    return len(cat.object_classes), len(cat.furniture_types)


def state_space(layout: Layout, num_agents: int, max_units: int) -> spaces.Box:
    k, f = _sizes()
    cell = np.concatenate([np.ones(TILE_PLANES + f, np.uint8), np.full(k, MAX_COUNT, np.uint8),
                           np.ones(num_agents, np.uint8)])
    goal_row = np.concatenate([np.ones(k + f, np.uint8), [max_units]]).astype(np.uint8)
    high = np.concatenate([np.tile(cell, layout.height * layout.width),
                           np.ones(num_agents * HAND_CAPACITY * k, np.uint8),
                           np.tile(goal_row, MAX_GOAL)])
    return spaces.Box(np.zeros_like(high), high, dtype=np.uint8)


class StateEncoder:
    """Encodes :class:`HouseholdState` s of one layout and team size (module docstring)."""

    def __init__(self, layout: Layout, num_agents: int):
        cat = load_catalog()
        self.k, self.f = _sizes()
        self.n = num_agents
        h, w = layout.height, layout.width
        self.planes = TILE_PLANES + self.f + self.k + num_agents
        base = np.zeros((h * w, self.planes), np.uint8)
        tiles = layout.tiles.ravel()
        base[tiles == FLOOR, _P_FLOOR] = 1
        base[tiles == WALL, _P_WALL] = 1
        self.furniture_cells = np.array([r * w + c for r, c in (x.cell for x in layout.furniture)],
                                        np.intp)
        self.door_cells = np.array([r * w + c for r, c in (d.cell for d in layout.doors)],
                                   np.intp)
        containers = [cat.furniture[x.type].is_container for x in layout.furniture]
        self.containers = np.flatnonzero(containers)
        for i, x in enumerate(layout.furniture):
            cell = self.furniture_cells[i]
            base[cell, _P_SURFACE] = not containers[i]
            base[cell, TILE_PLANES + cat.furniture_type_id(x.type)] = 1
        self.base = base
        self._goal_key: tuple | None = None
        self._goal: np.ndarray | None = None

    def encode(self, state: HouseholdState) -> np.ndarray:
        grid = self.base.copy()
        if len(self.door_cells):
            grid[self.door_cells, _P_DOOR + np.array(state.door_open, np.intp)] = 1
        if len(self.containers):
            is_open = np.array(state.container_open, np.intp)[self.containers]
            grid[self.furniture_cells[self.containers], _P_CONTAINER + is_open] = 1
        cat = load_catalog()
        scene = state.scene
        classes = [cat.class_id(c) for c in scene.object_class]
        rows, cols = [], []
        for f, inside in enumerate(state.contents):
            for o in inside:
                rows.append(self.furniture_cells[f])
                cols.append(TILE_PLANES + self.f + classes[o])
        np.add.at(grid, (rows, cols), 1)
        base = TILE_PLANES + self.f + self.k
        grid[state.agent_pos, base + np.arange(self.n)] = 1
        held = np.zeros((self.n, HAND_CAPACITY, self.k), np.uint8)
        for a, objs in enumerate(state.hands):
            for slot, o in enumerate(objs):
                held[a, slot, classes[o]] = 1
        return np.concatenate([grid.ravel(), held.ravel(), self._goal_rows(state)])

    def _goal_rows(self, state: HouseholdState) -> np.ndarray:
        # The scene itself (not its id, which Python reuses) keys the cache.
        key = (state.scene, state.progress)
        if self._goal_key is None or key[0] is not self._goal_key[0] or key[1] != self._goal_key[1]:
            cat = load_catalog()
            rows = np.zeros((MAX_GOAL, self.k + self.f + 1), np.uint8)
            for i, (p, have) in enumerate(zip(state.scene.goal, state.progress)):
                rows[i, cat.class_id(p.cls)] = 1
                rows[i, self.k + cat.furniture_type_id(p.target)] = 1
                rows[i, -1] = p.count - have
            self._goal, self._goal_key = rows.ravel(), key
        return self._goal
