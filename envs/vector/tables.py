"""Per-layout lookup tables of the batched core, derived from the scalar ``Scene``.

Everything here is read off the scalar env's own definitions (``Scene``'s derived
tables, the catalog, :meth:`ArrayObserver.static_windows`, the action table), so the
batched core has no layout rules of its own.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from orgteams.envs.core.actions import ACTIONS, HAND_CAPACITY, MAX_SLOTS
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.state import Scene
from orgteams.envs.observe.array_obs import MAX_GOAL, T_CLOSED, T_DOOR_CLOSED, ArrayObserver
from orgteams.envs.observe.rl_obs import flat_tail, planes

# Most memory for the float32 copy of the static planes (flat observations gather their
# rows from it; past this they are gathered as uint8 and converted).
FLAT_TABLE_BYTES = 64 << 20
# Neighbour kinds of the mask table, as in orgteams.envs.core.masks (there: floor/door/furniture).
K_NONE, K_FLOOR, K_DOOR, K_FURNITURE = 0, 1, 2, 3

# Action id -> verb, direction, slot index (orgteams.envs.core.actions.ACTIONS as arrays).
VERB = np.array([int(a.verb) for a in ACTIONS], np.int8)
DIRECTION = np.array([a.direction for a in ACTIONS], np.int64)
SLOT = np.array([a.index for a in ACTIONS], np.int64)


@dataclass(eq=False)
class LayoutTables:
    """Static arrays of one layout (and view radius / observability)."""

    height: int
    width: int
    deltas: np.ndarray  # (4,) flat cell offsets N, E, S, W
    floor: np.ndarray  # (HW,) bool
    door_at: np.ndarray  # (HW,) door index or -1
    furniture_at: np.ndarray  # (HW,) furniture index or -1
    is_container: np.ndarray  # (F,) bool
    capacity: np.ndarray  # (F,)
    furniture_type: np.ndarray  # (F,) catalog furniture type id
    furniture_cell: np.ndarray  # (F,) flat cell
    door_cell: np.ndarray  # (D,) flat cell
    max_capacity: int
    neighbour_kind: np.ndarray  # (HW, 4) K_* of the cell in each direction
    neighbour_index: np.ndarray  # (HW, 4) its door / furniture index (0 if none)
    neighbour_cell: np.ndarray  # (HW, 4)
    # observations
    radius: int
    channels: int
    base: np.ndarray  # (rows + 1, C) padded static features, last row zero
    windows: np.ndarray  # (HW, side * side) rows of ``base`` seen from each standing cell
    view_of_cell: np.ndarray  # (HW,) view id (-1 where nobody stands)
    visible: np.ndarray  # (views, HW) bool: cells seen from each view
    num_classes: int
    num_furniture_types: int
    stand_index: np.ndarray  # (HW,) row of static_planes for each standing cell (else 0)
    static_planes: np.ndarray  # (cells one can stand on, side * side, 38) uint8
    flat_tail: int  # entries of a flat observation after the planes
    furniture_slot: np.ndarray  # (standing cells, F) window_slot of each furniture
    switch_slot: np.ndarray  # (standing cells, D + containers) of each door, then container
    slot_cell: np.ndarray = None  # (standing cells, side * side) the cell seen there, or -1
    _static_flat: np.ndarray | None = None

    @property
    def cells(self) -> int:
        return self.height * self.width

    def static_flat(self) -> np.ndarray | None:
        """:attr:`static_planes` as float32 rows as wide as a flat observation (zeros
        after the planes), or None when that would pass ``FLAT_TABLE_BYTES``."""
        if self._static_flat is None:
            rows, cells, planes = self.static_planes.shape
            width = cells * planes + self.flat_tail
            if rows * width * 4 > FLAT_TABLE_BYTES:
                return None
            table = np.zeros((rows, width), np.float32)
            table[:, :cells * planes] = self.static_planes.reshape(rows, -1)
            self._static_flat = table
        return self._static_flat

    @functools.cached_property
    def switch_planes(self) -> tuple[np.ndarray, np.ndarray]:
        """The containers' furniture indices, and per switch (doors, then containers)
        the plane of its "closed" tile (tile code c is plane c - 1; "open" is the next)."""
        boxes = np.flatnonzero(self.is_container)
        closed = np.array([T_DOOR_CLOSED] * len(self.door_cell) + [T_CLOSED] * len(boxes))
        return boxes, closed - 1

    @functools.cached_property
    def cell_slot(self) -> np.ndarray | None:
        """``(standing cells, HW)`` int32: :meth:`window_slot` of every cell seen from
        each standing cell (a gather instead of the arithmetic per tick), or None when
        that would pass ``FLAT_TABLE_BYTES``."""
        stand = np.flatnonzero(self.view_of_cell >= 0)
        if len(stand) * self.cells * 4 > FLAT_TABLE_BYTES:
            return None
        return self.window_slot(stand[:, None], np.arange(self.cells)[None, :]).astype(np.int32)

    def window_slot(self, viewer: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Window position (``row * side + col``) of ``target`` cells in the view of an
        agent on ``viewer`` cells (broadcast), or -1 where it does not see them."""
        r, w = self.radius, self.width
        side = 2 * r + 1
        dy = target // w - viewer // w + r
        dx = target % w - viewer % w + r
        inside = (dy >= 0) & (dy < side) & (dx >= 0) & (dx < side)
        seen = self.visible[self.view_of_cell[viewer], target]
        return np.where(inside & seen, dy * side + dx, -1)


def layout_tables(scene: Scene, view_radius: int, full_observability: bool) -> LayoutTables:
    """The tables of ``scene``'s layout (any episode on it gives the same)."""
    lay = scene.layout
    cat = load_catalog()
    hw = lay.height * lay.width
    door_at = np.full(hw, -1, np.int64)
    for cell, i in scene.door_at.items():
        door_at[cell] = i
    furniture_at = np.full(hw, -1, np.int64)
    for cell, i in scene.furniture_at.items():
        furniture_at[cell] = i
    floor = np.frombuffer(scene.floor, np.uint8).astype(bool)
    deltas = np.array(scene.deltas, np.int64)
    kind = np.zeros((hw, 4), np.int8)
    index = np.zeros((hw, 4), np.int64)
    target = np.zeros((hw, 4), np.int64)
    # The same precedence as masks._neighbours: a door, else furniture, else floor.
    for cell in list(np.flatnonzero(floor)) + list(scene.door_at):
        for d in range(4):
            t = cell + deltas[d]
            if not 0 <= t < hw:
                continue
            target[cell, d] = t
            if door_at[t] >= 0:
                kind[cell, d], index[cell, d] = K_DOOR, door_at[t]
            elif furniture_at[t] >= 0:
                kind[cell, d], index[cell, d] = K_FURNITURE, furniture_at[t]
            elif floor[t]:
                kind[cell, d] = K_FLOOR
    observer = ArrayObserver(scene, view_radius, full_observability)
    base, windows = observer.static_windows()
    rooms = len(lay.rooms)
    views = rooms + len(lay.doors)
    visible = np.zeros((views + 1, hw), bool)  # the extra last row: "no view" (-1)
    for v in range(views):
        r = view_radius
        visible[v] = observer.view_mask(v)[r:r + lay.height, r:r + lay.width].ravel()
    capacity = np.array(scene.capacity, np.int64)
    furniture_cell = np.array([f.cell[0] * lay.width + f.cell[1] for f in lay.furniture],
                              np.int64)
    door_cell = np.array([d.cell[0] * lay.width + d.cell[1] for d in lay.doors], np.int64)
    boxes = furniture_cell[np.array(scene.is_container, bool)]
    stand = np.flatnonzero(scene.view_array >= 0)
    stand_index = np.zeros(hw, np.int64)
    stand_index[stand] = np.arange(len(stand))
    tables = LayoutTables(
        height=lay.height, width=lay.width, deltas=deltas, floor=floor, door_at=door_at,
        furniture_at=furniture_at, is_container=np.array(scene.is_container, bool),
        capacity=capacity,
        furniture_type=np.array([cat.furniture_type_id(f.type) for f in lay.furniture],
                                np.int64),
        furniture_cell=furniture_cell, door_cell=door_cell,
        max_capacity=int(capacity.max(initial=0)),
        neighbour_kind=kind, neighbour_index=index, neighbour_cell=target,
        radius=view_radius, channels=base.shape[1], base=base, windows=windows,
        view_of_cell=scene.view_array, visible=visible,
        num_classes=len(cat.object_classes), num_furniture_types=len(cat.furniture_types),
        stand_index=stand_index, flat_tail=flat_tail(np.zeros((1, 2), np.uint8),
                                                     np.zeros((1, MAX_GOAL, 3), np.uint8)
                                                     ).shape[1],
        static_planes=_static_planes(base, windows[stand], np.concatenate([door_cell, boxes]),
                                     lay.width, view_radius),
        furniture_slot=np.zeros((0, 0), np.int64), switch_slot=np.zeros((0, 0), np.int64))
    # Where each piece of furniture, door and container shows in each standing cell's
    # window (the same for every household: a gather instead of the arithmetic per tick).
    viewer = stand[:, None]
    tables.furniture_slot = tables.window_slot(viewer, furniture_cell[None, :])
    tables.switch_slot = tables.window_slot(viewer, np.concatenate([door_cell, boxes])[None, :])
    side = 2 * view_radius + 1
    ky, kx = np.divmod(np.arange(side * side), side)
    y = stand[:, None] // lay.width + ky - view_radius
    x = stand[:, None] % lay.width + kx - view_radius
    inside = (y >= 0) & (y < lay.height) & (x >= 0) & (x < lay.width)
    cell = np.where(inside, y * lay.width + x, 0)
    seen = inside & visible[scene.view_array[stand]][np.arange(len(stand))[:, None], cell]
    tables.slot_cell = np.where(seen, cell, -1)
    return tables


def _static_planes(base: np.ndarray, windows: np.ndarray, switches: np.ndarray, width: int,
                   radius: int) -> np.ndarray:
    """Per window (one per standing cell), the ``rl_obs`` planes of what never changes
    in it: tiles (doors and containers left blank: they open and close), furniture types and
    the self mark, encoded by the scalar encoder :func:`orgteams.envs.observe.rl_obs.planes`."""
    base = base.copy()
    pad_width = width + 2 * radius
    rows = (switches // width + radius) * pad_width + switches % width + radius
    base[rows, 0] = 0
    side = 2 * radius + 1
    images = base[windows].reshape(len(windows), side, side, -1)
    images[:, radius, radius, 2] = 1
    return planes(images, np.zeros((len(windows), MAX_GOAL, 3), np.uint8)).reshape(
        len(windows), side * side, -1)


__all__ = ["LayoutTables", "layout_tables", "VERB", "DIRECTION", "SLOT", "HAND_CAPACITY",
           "MAX_SLOTS", "K_NONE", "K_FLOOR", "K_DOOR", "K_FURNITURE"]
