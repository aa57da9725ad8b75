"""Observations of a batch: the ``rl_obs`` planes of every agent, then the scalar encoders.

The scalar env builds the array view (:mod:`orgteams.envs.observations`) and
re-encodes it as 38 planes per cell (:func:`orgteams.envs.rl_obs.planes`). The batch
builds the planes of all ``N x A`` agents directly: the still part of each window
(tiles, furniture types, the self mark: :attr:`LayoutTables.static_planes`, encoded
by the scalar ``planes``) gathered by the agent's cell, then what changes written
where the agent sees it: door and container tiles, teammates, object counts (on
surfaces, in open containers, in the hands of agents standing there) and the goal
rows' planes. The ``flat`` and ``image`` encodings of the planes are the scalar ones
(:func:`~orgteams.envs.rl_obs.flat_from_planes`, whose parts it writes into one
array, and ``image_from_planes``).

This restates the plane rules of ``rl_obs.planes`` and the visibility of
``observations.py``; ``tests/envs/test_vector_differential.py`` compares the result
with the scalar env's observations at every tick.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.actions import HAND_CAPACITY
from orgteams.envs.observations import T_CLOSED, T_DOOR_CLOSED
from orgteams.envs.rl_obs import AGENT_PLANES, TILE_PLANES, flat_tail, image_from_planes
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.tables import LayoutTables

_TEAMMATE = TILE_PLANES + 1  # agent planes: self, teammate


def batch_planes(t: LayoutTables, s: BatchState) -> np.ndarray:
    """``(N, A, side * side, 38)`` uint8 planes of every agent (``rl_obs.planes``)."""
    n, agents = s.pos.shape
    pos = s.pos
    objects_plane = TILE_PLANES + AGENT_PLANES + t.num_furniture_types
    goal_plane = objects_plane + 1
    out = t.static_planes[t.stand_index[pos]]
    viewer = pos[:, :, None]
    # Doors and containers: the tile one-hot of "closed" + open flag (tile code c is
    # plane c - 1), where seen.
    boxes = np.flatnonzero(t.is_container)
    for cells, flags, closed in ((t.door_cell, s.door_open, T_DOOR_CLOSED),
                                 (t.furniture_cell[boxes], s.container_open[:, boxes],
                                  T_CLOSED)):
        if len(cells):
            slot = t.window_slot(viewer, cells[None, None, :])
            e, a, j = np.nonzero(slot >= 0)
            out[e, a, slot[e, a, j], closed - 1 + flags[e, j]] = 1
    # Teammates where seen; the self mark is in the static planes.
    seen = t.window_slot(viewer, pos[:, None, :])  # (N, A viewer, A other)
    others = (seen >= 0) & (np.arange(agents)[None, :, None] != np.arange(agents))
    e, a, b = np.nonzero(others)
    out[e, a, seen[e, a, b], _TEAMMATE] = 1
    # Objects: on surfaces and in open containers, and held by agents, where seen.
    fslot = t.window_slot(viewer, t.furniture_cell[None, None, :])  # (N, A, F)
    e, a, f = np.nonzero((fslot >= 0) & s.container_open[:, None, :])
    inside = s.contents[e, f]  # (M, cap + 1), -1 pads
    m, k = np.nonzero(inside >= 0)
    parts = [(e[m], a[m], fslot[e, a, f][m], inside[m, k])]
    e, a, b = np.nonzero((seen >= 0) & (s.held[:, None, :] > 0))
    for h in range(HAND_CAPACITY):
        has = s.held[e, b] > h
        ee, aa, bb = e[has], a[has], b[has]
        parts.append((ee, aa, seen[ee, aa, bb], s.hands[ee, bb, h]))
    e, a, slot, obj = (np.concatenate(x) for x in zip(*parts))
    if len(e):
        cls = s.object_class[e, obj]
        np.add.at(out, (e, a, slot, objects_plane), 1)
        i, g = np.nonzero(s.goal_class[e] == cls[:, None])  # each goal row of its class
        np.add.at(out, (e[i], a[i], slot[i], goal_plane + 2 * g), 1)
    # Goal targets: furniture of a row's target type, while the row misses units.
    missing = (s.goal_count > s.progress) & (s.goal_class >= 0)  # (N, G)
    wanted = (t.furniture_type[None, :, None] == s.goal_target[:, None, :]) \
        & missing[:, None, :]  # (N, F, G)
    e, a, f = np.nonzero((fslot >= 0) & wanted.any(axis=2)[:, None, :])
    i, g = np.nonzero(wanted[e, f])
    e, a, f = e[i], a[i], f[i]
    out[e, a, fslot[e, a, f], goal_plane + 1 + 2 * g] = 1
    return out


def hands_and_goals(s: BatchState) -> tuple[np.ndarray, np.ndarray]:
    """``(N, A, 2)`` hands (class + 1, 0 empty) and ``(N, 5, 3)`` goal rows."""
    held = s.hands[:, :, :HAND_CAPACITY]
    cls = s.object_class[np.arange(len(held))[:, None, None], np.maximum(held, 0)]
    hands = np.where(held >= 0, cls + 1, 0).astype(np.uint8)
    goal = np.stack([s.goal_class + 1, s.goal_target + 1, s.goal_count - s.progress],
                    axis=-1).astype(np.uint8)
    return hands, goal


def batch_observations(t: LayoutTables, s: BatchState, mode: str, inverse_scale: np.ndarray
                       | None, image_scale: int) -> np.ndarray:
    """``(N, A, ...)`` observations in ``mode`` ``"flat"`` or ``"image"``."""
    n, agents = s.pos.shape
    side = 2 * t.radius + 1
    grid = batch_planes(t, s).reshape(n * agents, side, side, -1)
    if mode == "flat":
        # flat_from_planes without its concatenation: each part scaled straight into
        # one float32 array (the same products, so the same floats).
        hands, goal = hands_and_goals(s)
        tail = flat_tail(hands.reshape(n * agents, HAND_CAPACITY),
                         np.repeat(goal, agents, axis=0))
        out = np.empty((n * agents, len(inverse_scale)), np.float32)
        cut = len(inverse_scale) - tail.shape[1]
        np.multiply(grid.reshape(n * agents, cut), inverse_scale[:cut], out=out[:, :cut])
        np.multiply(tail, inverse_scale[cut:], out=out[:, cut:])
    else:
        out = image_from_planes(grid, image_scale)
    return out.reshape((n, agents) + out.shape[1:])


__all__ = ["batch_planes", "batch_observations", "hands_and_goals"]
