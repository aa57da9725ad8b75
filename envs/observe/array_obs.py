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

import itertools
from typing import Any

import numpy as np
from gymnasium import spaces

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.observe.view_tables import (  # the tile codes, re-exported
    BASE_CHANNELS,
    LAYOUT_ATTRS,
    T_CLOSED,
    T_DOOR_CLOSED,
    T_DOOR_OPEN,
    T_FLOOR,
    T_OPEN,
    T_SURFACE,
    T_UNSEEN,
    T_WALL,
    layout_tables,
)

MAX_GOAL = 5


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
        """``previous``: the observer of an earlier episode, no longer used; when it has the
        same layout, view radius and observability, its tables, view masks and window
        caches (which depend on nothing else) are reused instead of being built again."""
        self.scene, self.r, self.full = scene, view_radius, full_observability
        cat = load_catalog()
        if (previous is not None and previous.scene.layout is scene.layout
                and previous.r == view_radius and previous.full == full_observability):
            self.__dict__.update({k: previous.__dict__[k] for k in LAYOUT_ATTRS})
        else:
            self.__dict__.update(layout_tables(scene, view_radius))
        # Speed: the padded features live in one preallocated buffer that each new state
        # overwrites (no np.pad per tick), with one extra all-zero row at the end. An agent's
        # image is then one gather of buffer rows: ``_windows[cell]`` maps each padded cell
        # to itself when the view sees it, else to that zero row (masking for free).
        self._flat_ext = np.zeros((len(self._flat_base) + 1, self._channels), np.uint8)
        self._flat_buffer = self._flat_ext[:-1]
        self._layer_ext = np.zeros_like(self._flat_ext)
        self._layer = self._layer_ext[:-1]
        self.obj_class = np.array([cat.class_id(c) for c in scene.object_class], int)
        self._obj_class_list = self.obj_class.tolist()
        self._obj_channel = (self.obj_class + BASE_CHANNELS).tolist()
        self.goal_rows = [(cat.class_id(p.cls) + 1, cat.furniture_type_id(p.target) + 1)
                          for p in scene.goal]
        # The state itself (not its id, which Python reuses once it is freed) keys the cache.
        self._cached_state: HouseholdState | None = None
        self._layer_key: tuple | None = None
        # Speed: the buffer holds the layer plus the agents; while the layer is unchanged,
        # a new state only restores the rows its predecessor's agents touched. Versions
        # are unique across observers, so a reused window cache never matches stale ones.
        self._layer_version = next(_VERSIONS)
        self._buffer_version = -1
        self._agent_rows: list[int] = []
        self._marks_key: tuple = ((), (), -1)
        self._marks: list[tuple[int, int]] = []
        self._everyone: list[int] = []
        self._window_cells: list[int] | None = None
        self._window_rows: np.ndarray | None = None
        self._goal_progress: tuple[int, ...] | None = None
        self._goal: np.ndarray | None = None
        self._rows = np.zeros((0, HAND_CAPACITY + 3 * MAX_GOAL), np.uint8)

    def __getstate__(self) -> dict[str, Any]:
        # The buffers are views of their ``_ext`` arrays (the extra zero row); a pickle or
        # deepcopy would make them separate arrays, so a copied env drew each new layer
        # where its windows no longer read it (a door opened, the copy showed it shut).
        state = self.__dict__.copy()
        del state["_flat_buffer"], state["_layer"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._flat_buffer = self._flat_ext[:-1]
        self._layer = self._layer_ext[:-1]

    def static_windows(self) -> tuple[np.ndarray, np.ndarray]:
        """The layout's static part of every observation, for the batched core
        (:mod:`orgteams.envs.vector`): ``(base, windows)`` where ``base`` is the padded
        flat ``(rows + 1, C)`` features before doors, containers, objects and agents
        are drawn (the last row all zero), and ``windows[cell]`` the ``(side * side,)``
        rows of ``base`` that the agent standing on ``cell`` sees (hidden -> the zero row;
        cells nobody stands on: all the zero row)."""
        for cell in self.scene.view_of_cell:
            self._fill_window(cell)
        windows = np.full_like(self._windows, len(self._flat_base))
        cells = list(self.scene.view_of_cell)
        windows[cells] = self._windows[cells]
        base = np.concatenate([self._flat_base, np.zeros((1, self._channels), np.uint8)])
        return base, windows

    def view_mask(self, view: int) -> np.ndarray:
        """(H + 2r, W + 2r) bool, padded: the cells visible from a view."""
        # The batched core takes its visibility from here (vector.tables) and restates
        # what changes inside a view; tests/envs/vector/test_vector_differential.py pins it.
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
        self._layer_version = next(_VERSIONS)
        return layer

    def _features(self, state: HouseholdState) -> np.ndarray:
        """Padded flat (rows, C) features of the whole house with the agents drawn in.

        Used for large teams. The array is a reused buffer: valid until the next call
        with another state.
        """
        flat = self._flat_buffer
        if state is self._cached_state:
            return flat
        layer = self._furniture_layer(state)
        if self._buffer_version != self._layer_version:
            np.copyto(flat, layer)
            self._buffer_version = self._layer_version
        else:  # same layer: undo the previous agents' rows
            old = self._agent_rows
            flat[old] = layer[old]
        pad, channel = self._pad_list, self._obj_channel
        agent_cells = [pad[c] for c in state.agent_pos]
        self._agent_rows = agent_cells
        flat[agent_cells, 2] = 2
        rows: list[int] = []
        cols: list[int] = []
        for a, held in enumerate(state.hands):
            for o in held:
                rows.append(agent_cells[a])
                cols.append(channel[o])
        _add_ones(flat, rows, cols)
        self._cached_state = state
        return flat

    def _fill_window(self, cell: int) -> None:
        """Buffer rows of the window around ``cell``; rows the view hides -> the zero row."""
        if cell in self._window_ready:
            return
        view = self.scene.view_of_cell[cell]
        rows = self._top_left[cell] + self._offsets
        visible = self.view_mask(view).ravel()[rows]
        self._windows[cell] = np.where(visible, rows, len(self._flat_buffer))
        # Where a teammate standing on each seen cell appears: its byte offset in the image.
        seen = np.flatnonzero(visible)
        lay = self.scene.layout
        pw = lay.width + 2 * self.r
        at = (rows[seen] // pw - self.r) * lay.width + rows[seen] % pw - self.r
        stand = self.scene.view_array[at] >= 0
        self._seen[cell] = {c: k for c, k in zip(at[stand].tolist(),
                                                  (seen[stand] * self._channels).tolist())
                            if c != cell}
        self._window_ready.add(cell)

    def _small_team_images(self, state: HouseholdState, agents: list[int], cells: list[int]
                           ) -> np.ndarray:
        """(n, side * side, C) images for a team of at most ``_PAIRWISE`` agents.

        Each image starts as a copy of its cell's cached window of the furniture layer
        (self mark included); then the agent's own held objects and every teammate its
        view contains are written in, one byte at a time. Windows are re-taken only
        when the layer changes (something opened, closed, picked or put).
        """
        self._furniture_layer(state)
        version = self._layer_version
        pos, hands = state.agent_pos, state.hands
        key = (tuple(agents), tuple(pos), version)
        if key != self._marks_key:  # someone moved or the layer changed
            stamps = self._cache_version
            for cell in cells:
                if stamps[cell] != version:
                    self._cache_window(cell, version)
            if key[:2] != self._marks_key[:2]:  # work out again who sees whom
                self._marks = self._teammate_marks(agents, cells, pos)
            self._marks_key = key
        images = self._window_cache.take(cells, axis=0)
        if agents and (self._marks or any(hands)):
            self._draw_agents(images, agents, hands)
        return images

    def _draw_agents(self, images: np.ndarray, agents: list[int],
                     hands: list[tuple[int, ...]]) -> None:
        """Write the seen teammates and everyone's held objects into ``images``."""
        view = memoryview(images.reshape(-1))
        channel = self._obj_channel
        per_agent = len(view) // len(agents)
        centre = per_agent // 2 - self._channels // 2  # the middle cell's first byte
        for i, agent in enumerate(agents):
            for o in hands[agent]:
                view[i * per_agent + centre + channel[o]] += 1
        for at, other in self._marks:
            view[at + 2] = 2
            for o in hands[other]:
                view[at + channel[o]] += 1

    def _teammate_marks(self, agents: list[int], cells: list[int], pos: list[int]
                        ) -> list[tuple[int, int]]:
        """(byte offset in the batch of images, agent index) of every teammate seen."""
        per_agent = (2 * self.r + 1) ** 2 * self._channels
        marks = []
        for i, cell in enumerate(cells):
            sees = self._seen[cell]
            for other, other_cell in enumerate(pos):
                at = sees.get(other_cell)
                if at is not None:
                    marks.append((i * per_agent + at, other))
        return marks

    def _cache_window(self, cell: int, version: int) -> None:
        """Take ``cell``'s masked window of the current layer into the window cache."""
        if self._window_cache is None:
            lay = self.scene.layout
            side = 2 * self.r + 1
            self._window_cache = np.zeros((lay.height * lay.width, side * side,
                                           self._channels), np.uint8)
        self._fill_window(cell)
        window = self._window_cache[cell]
        self._layer_ext.take(self._windows[cell], axis=0, out=window, mode="clip")
        window[len(window) // 2, 2] = 1
        self._cache_version[cell] = version

    def _goal_array(self, state: HouseholdState) -> np.ndarray:
        """The goal rows; they depend on the goal progress only, so they are cached on it."""
        if state.progress != self._goal_progress:
            goal = np.zeros((MAX_GOAL, 3), np.uint8)
            for i, ((cls, target), pred, have) in enumerate(
                    zip(self.goal_rows, self.scene.goal, state.progress)):
                goal[i] = (cls, target, pred.count - have)
            self._goal, self._goal_progress = goal, state.progress
        return self._goal

    def _hands_and_goals(self, state: HouseholdState, agents: list[int]
                         ) -> tuple[np.ndarray, np.ndarray]:
        """(n, 2) hands and (n, 5, 3) goals, views into one fresh (n, 17) byte array.

        The array starts as a copy of a template holding the goal rows (rebuilt when the
        goal progress or the number of agents changes); held objects are written in.
        """
        n = len(agents)
        if state.progress != self._goal_progress or len(self._rows) != n:
            self._rows = np.zeros((n, HAND_CAPACITY + 3 * MAX_GOAL), np.uint8)
            self._rows[:, HAND_CAPACITY:] = self._goal_array(state).reshape(-1)
        rows = self._rows.copy()
        all_hands = state.hands
        if any(all_hands):
            obj_class = self._obj_class_list
            for i, a in enumerate(agents):
                for j, o in enumerate(all_hands[a]):
                    rows[i, j] = obj_class[o] + 1
        return rows[:, :HAND_CAPACITY], rows[:, HAND_CAPACITY:].reshape(n, MAX_GOAL, 3)

    def observe(self, state: HouseholdState, agent: int) -> dict[str, np.ndarray]:
        """The observation of agent index ``agent``."""
        return self.observe_many(state, [agent])[0]

    def observe_many(self, state: HouseholdState, agents: list[int]
                     ) -> list[dict[str, np.ndarray]]:
        """The observations of several agent indices, built together (one gather)."""
        pos = state.agent_pos
        if len(self._everyone) != len(pos):
            self._everyone = list(range(len(pos)))
        cells = pos if agents == self._everyone else [pos[a] for a in agents]
        shape = (len(cells), 2 * self.r + 1, 2 * self.r + 1, self._channels)
        if len(pos) <= _PAIRWISE and self._cache_fits:
            images = self._small_team_images(state, agents, cells).reshape(shape)
        else:
            self._features(state)
            if not self._window_ready.issuperset(cells):
                for cell in cells:
                    self._fill_window(cell)
            # mode="clip" skips the bounds checks (every window row is a valid buffer row).
            if cells != self._window_cells:  # agents often stand still: reuse the indices
                self._window_rows = self._windows.take(cells, axis=0)
                self._window_cells = list(cells)
            images = self._flat_ext.take(self._window_rows, axis=0, mode="clip")
            images = images.reshape(shape)
            images[:, self.r, self.r, 2] = 1
        hands, goals = self._hands_and_goals(state, agents)
        return [{"image": im, "hands": h, "goal": g} for im, h, g in zip(images, hands, goals)]


# Up to this many agents in the world, per-pair Python checks of who sees whom beat
# drawing every agent into a whole-house buffer and gathering each window from it.
_PAIRWISE = 8
_VERSIONS = itertools.count()  # layer versions, unique across observers


def _add_ones(flat: np.ndarray, rows: list[int], cols: list[int]) -> None:
    """``flat[rows[i], cols[i]] += 1`` for every i, repeated pairs counted each time."""
    if len(rows) > 16:
        np.add.at(flat, (rows, cols), 1)
    else:  # a few scalar increments are cheaper than one ufunc.at call
        for row, col in zip(rows, cols):
            flat[row, col] += 1


__all__ = ["ArrayObserver", "BASE_CHANNELS", "MAX_GOAL", "T_CLOSED", "T_DOOR_CLOSED",
           "T_DOOR_OPEN", "T_FLOOR", "T_OPEN", "T_SURFACE", "T_UNSEEN", "T_WALL",
           "observation_space"]
