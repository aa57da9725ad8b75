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

    def __init__(self, scene: Scene, view_radius: int, full_observability: bool = False,
                 previous: ArrayObserver | None = None):
        """``previous``: the observer of an earlier episode; when it has the same layout,
        view radius and observability, its view masks and windows (which depend on
        nothing else) are reused instead of being built again."""
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
        self._obj_class_list = self.obj_class.tolist()
        self.goal_rows = [(cat.class_id(p.cls) + 1, cat.furniture_type_id(p.target) + 1)
                          for p in scene.goal]
        self._masks: dict[int, np.ndarray] = {}
        # The state itself (not its id, which Python reuses once it is freed) keys the cache.
        self._cached_state: HouseholdState | None = None
        self._padded: np.ndarray | None = None
        # Speed: the padded features live in one preallocated buffer that each new state
        # overwrites (no np.pad per tick), with one extra all-zero row at the end. An agent's
        # image is then one gather of buffer rows: ``_visible[view]`` maps each padded cell
        # to itself when the view sees it, else to that zero row (masking for free).
        r = view_radius
        ph, pw = h + 2 * r, w + 2 * r
        padded_base = np.zeros((ph, pw, BASE_CHANNELS + k), np.uint8)
        padded_base[r:r + h, r:r + w] = base
        self._padded_base = padded_base
        self._flat_ext = np.zeros((ph * pw + 1, BASE_CHANNELS + k), np.uint8)
        self._flat_buffer = self._flat_ext[:-1]
        self._buffer = self._flat_buffer.reshape(ph, pw, -1)
        cells = np.arange(h * w)
        self._pad_index = (cells // w + r) * pw + cells % w + r
        self._top_left = self._pad_index - (r * pw + r)  # padded index of the window corner
        self._door_pad = self._pad_index[self.door_flat]
        self._container_pad = self._pad_index[self.container_flat[self.container_cells]]
        self._pad_list = self._pad_index.tolist()
        # Doors and containers: one scatter of "closed + is_open" into channel 0 per tick.
        self._container_list = self.container_cells.tolist()
        self._switch_pad = np.concatenate([self._door_pad, self._container_pad]).astype(np.intp)
        self._switch_base = np.array([T_DOOR_CLOSED] * len(self._door_pad)
                                     + [T_CLOSED] * len(self._container_pad), np.uint8)
        self._n_switches = len(self._switch_pad)
        self._flat_base = padded_base.reshape(ph * pw, -1)
        self._layer = np.empty_like(self._flat_base)
        # Speed: byte views of the buffer and the layer for per-row and per-byte writes.
        self._channels = BASE_CHANNELS + k
        self._mv = memoryview(self._flat_ext.reshape(-1))
        self._layer_mv = memoryview(self._layer.reshape(-1))
        self._layer_key: tuple | None = None
        # Speed: the buffer holds the layer plus the agents; while the layer is unchanged,
        # a new state only restores the rows its predecessor's agents touched.
        self._layer_version = 0
        self._buffer_version = -1
        self._agent_rows: list[int] = []
        self._furniture_pad = self._pad_index[self.container_flat].tolist()
        self._obj_channel = (self.obj_class + BASE_CHANNELS).tolist()
        side = 2 * r + 1
        self._offsets = (np.arange(side)[:, None] * pw + np.arange(side)).ravel()
        # Per standing cell, the buffer rows of its masked window, filled on first use.
        self._windows = np.zeros((h * w, side * side), np.intp)
        self._window_ready: set[int] = set()
        if (previous is not None and previous.scene.layout is lay
                and previous.r == view_radius and previous.full == full_observability):
            self._masks, self._windows = previous._masks, previous._windows
            self._window_ready = previous._window_ready
        self._everyone: list[int] = []
        self._window_cells: list[int] | None = None
        self._window_rows: np.ndarray | None = None
        self._goal_progress: tuple[int, ...] | None = None
        self._goal: np.ndarray | None = None
        self._goal_raw = b""

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

    def _furniture_layer(self, state: HouseholdState) -> np.ndarray:
        """Flat base features plus doors, containers and what lies on or in furniture.

        Cached on the values of ``door_open``, ``container_open`` and ``contents``, which
        most ticks leave unchanged, so a tick usually only redraws the agents.
        """
        key = (state.door_open, state.container_open, state.contents)
        if key == self._layer_key:
            return self._layer
        layer = self._layer
        np.copyto(layer, self._flat_base)
        opened = state.container_open
        if self._n_switches:
            flags = [*state.door_open, *(opened[i] for i in self._container_list)]
            layer[self._switch_pad, 0] = self._switch_base + np.array(flags, np.uint8)
        rows: list[int] = []
        cols: list[int] = []
        channel, furn_pad = self._obj_channel, self._furniture_pad
        for f, inside in enumerate(state.contents):
            if inside and opened[f]:
                cell = furn_pad[f]
                for o in inside:
                    rows.append(cell)
                    cols.append(channel[o])
        _add_ones(layer, rows, cols)
        self._layer_key = (list(state.door_open), list(opened), list(state.contents))
        self._layer_version += 1
        return layer

    def _features(self, state: HouseholdState) -> np.ndarray:
        """Padded (H + 2r, W + 2r, C) features of the whole house for this state.

        The array is a reused buffer: valid until the next call with another state.
        """
        if state is self._cached_state:
            return self._padded
        buf = self._buffer
        flat = self._flat_buffer
        layer = self._furniture_layer(state)
        if self._buffer_version != self._layer_version:
            np.copyto(flat, layer)
            self._buffer_version = self._layer_version
        elif len(self._agent_rows) > _FEW:  # same layer: undo the previous agents' rows
            old = self._agent_rows
            flat[old] = layer[old]
        else:  # a few rows: memoryview slices are far cheaper than fancy indexing
            mv, lmv, c = self._mv, self._layer_mv, self._channels
            for row in self._agent_rows:
                start = row * c
                mv[start:start + c] = lmv[start:start + c]
        pad, channel = self._pad_list, self._obj_channel
        agent_cells = [pad[c] for c in state.agent_pos]
        self._agent_rows = agent_cells
        if len(agent_cells) > _FEW:
            flat[agent_cells, 2] = 2
            rows: list[int] = []
            cols: list[int] = []
            for a, held in enumerate(state.hands):
                for o in held:
                    rows.append(agent_cells[a])
                    cols.append(channel[o])
            _add_ones(flat, rows, cols)
        else:  # per-byte writes through a memoryview (counts stay far below 255)
            mv, c = self._mv, self._channels
            for row, held in zip(agent_cells, state.hands):
                start = row * c
                mv[start + 2] = 2
                for o in held:
                    mv[start + channel[o]] += 1
        self._padded = buf
        self._cached_state = state
        return buf

    def _fill_window(self, cell: int) -> None:
        """Buffer rows of the window around ``cell``; rows the view hides -> the zero row."""
        if cell in self._window_ready:
            return
        view = self.scene.view_of_cell[cell]
        rows = self._top_left[cell] + self._offsets
        visible = self.view_mask(view).ravel()[rows]
        self._windows[cell] = np.where(visible, rows, len(self._flat_buffer))
        self._window_ready.add(cell)

    def _goal_array(self, state: HouseholdState) -> np.ndarray:
        """The goal rows; they depend on the goal progress only, so they are cached on it."""
        if state.progress != self._goal_progress:
            goal = np.zeros((MAX_GOAL, 3), np.uint8)
            for i, ((cls, target), pred, have) in enumerate(
                    zip(self.goal_rows, self.scene.goal, state.progress)):
                goal[i] = (cls, target, pred.count - have)
            self._goal, self._goal_progress = goal, state.progress
            self._goal_raw = goal.tobytes()
        return self._goal

    def _goal_bytes(self, state: HouseholdState) -> bytes:
        """``_goal_array(state)`` as bytes (C order)."""
        if state.progress != self._goal_progress:
            self._goal_array(state)
        return self._goal_raw

    def observe(self, state: HouseholdState, agent: int) -> dict[str, np.ndarray]:
        """The observation of agent index ``agent``."""
        return self.observe_many(state, [agent])[0]

    def observe_many(self, state: HouseholdState, agents: list[int]
                     ) -> list[dict[str, np.ndarray]]:
        """The observations of several agent indices, built together (one gather)."""
        self._features(state)
        pos = state.agent_pos
        if len(self._everyone) != len(pos):
            self._everyone = list(range(len(pos)))
        cells = pos if agents == self._everyone else [pos[a] for a in agents]
        if not self._window_ready.issuperset(cells):
            for cell in cells:
                self._fill_window(cell)
        side = 2 * self.r + 1
        n = len(cells)
        # mode="clip" skips the bounds checks (every window row is a valid buffer row).
        if cells != self._window_cells:  # agents often stand still: reuse the row indices
            self._window_rows = self._windows.take(cells, axis=0)
            self._window_cells = list(cells)
        images = self._flat_ext.take(self._window_rows, axis=0, mode="clip")
        if n > _FEW:
            images = images.reshape(n, side, side, -1)
            images[:, self.r, self.r, 2] = 1
        else:  # the self mark, one byte per agent through a memoryview
            per_agent = images.size // n if n else 0
            centre = (self.r * side + self.r) * self._channels + 2
            view = memoryview(images.reshape(-1))
            for i in range(n):
                view[i * per_agent + centre] = 1
            images = images.reshape(n, side, side, -1)
        # hands and goals of all agents: one fresh byte buffer, filled per byte.
        data = bytearray(HAND_CAPACITY * n) + self._goal_bytes(state) * n
        obj_class = self._obj_class_list
        all_hands = state.hands
        for i, a in enumerate(agents):
            held = all_hands[a]
            if held:
                for j, o in enumerate(held):
                    data[HAND_CAPACITY * i + j] = obj_class[o] + 1
        flat = np.frombuffer(data, np.uint8)
        split = HAND_CAPACITY * n
        hands = flat[:split].reshape(n, HAND_CAPACITY)
        goals = flat[split:].reshape(n, MAX_GOAL, 3)
        return [{"image": im, "hands": h, "goal": g} for im, h, g in zip(images, hands, goals)]


_FEW = 16  # up to this many agents, per-row Python writes beat one fancy-index call


def _add_ones(flat: np.ndarray, rows: list[int], cols: list[int]) -> None:
    """``flat[rows[i], cols[i]] += 1`` for every i, repeated pairs counted each time."""
    if len(rows) > 16:
        np.add.at(flat, (rows, cols), 1)
    else:  # a few scalar increments are cheaper than one ufunc.at call
        for row, col in zip(rows, cols):
            flat[row, col] += 1
