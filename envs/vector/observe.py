"""Observations of a batch: the array view of every agent, then the scalar encoders.

The array image (:mod:`orgteams.envs.observations`) of all ``N x A`` agents is built
as the static window of the agent's cell (:meth:`ArrayObserver.static_windows`, the
scalar tables) plus what changes: door and container tiles, objects in open
furniture, teammates and held objects, each written where the agent sees it. The
``flat`` and ``image`` encodings are then the scalar ones
(:func:`orgteams.envs.rl_obs.encode_flat` / ``encode_image``) over the whole batch.
``tests/envs/test_vector_differential.py`` compares the result with the scalar env's
observations at every tick.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.actions import HAND_CAPACITY
from orgteams.envs.observations import BASE_CHANNELS, T_CLOSED, T_DOOR_CLOSED
from orgteams.envs.rl_obs import encode_flat, encode_image
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.tables import LayoutTables


def batch_images(t: LayoutTables, s: BatchState) -> np.ndarray:
    """``(N, A, side * side, C)`` uint8 array images (the ``image`` of ``obs_mode="array"``)."""
    n, agents = s.pos.shape
    pos = s.pos
    images = t.base[t.windows[pos]]  # static tiles, rooms, furniture types; hidden -> 0
    agent = np.arange(agents)[None, :, None]
    viewer = pos[:, :, None]
    # Doors and containers: tile "closed" + open flag where seen.
    boxes = np.flatnonzero(t.is_container)
    for cells, flags, closed in ((t.door_cell, s.door_open, T_DOOR_CLOSED),
                                 (t.furniture_cell[boxes], s.container_open[:, boxes],
                                  T_CLOSED)):
        if len(cells):
            slot = t.window_slot(viewer, cells[None, None, :])
            e, a, j = np.nonzero(slot >= 0)
            images[e, a, slot[e, a, j], 0] = closed + flags[e, j]
    # Objects on surfaces and in open containers, counted per class where seen.
    slot = t.window_slot(viewer, t.furniture_cell[None, None, :])  # (N, A, F)
    shown = (slot >= 0) & s.container_open[:, None, :]
    e, a, f = np.nonzero(shown)
    objects = s.contents[e, f]  # (M, cap + 1)
    m, k = np.nonzero(objects >= 0)
    _count(images, e[m], a[m], slot[e, a, f][m],
           s.object_class[e[m], objects[m, k]])
    # Agents: self at the centre, teammates where seen; held objects at the holder's cell.
    seen = t.window_slot(viewer, pos[:, None, :])  # (N, A viewer, A other)
    images[:, :, len(t.windows[0]) // 2, 2] = 1
    others = (seen >= 0) & (agent != np.arange(agents)[None, None, :])
    e, a, b = np.nonzero(others)
    images[e, a, seen[e, a, b], 2] = 2
    e, a, b = np.nonzero((seen >= 0) & (s.held[:, None, :] > 0))
    for h in range(HAND_CAPACITY):
        has = s.held[e, b] > h
        ee, aa, bb = e[has], a[has], b[has]
        _count(images, ee, aa, seen[ee, aa, bb], s.object_class[ee, s.hands[ee, bb, h]])
    return images


def _count(images: np.ndarray, e: np.ndarray, a: np.ndarray, slot: np.ndarray,
           cls: np.ndarray) -> None:
    """``images[e, a, slot, BASE_CHANNELS + cls] += 1`` for every entry, repeats counted."""
    if len(e):
        np.add.at(images, (e, a, slot, BASE_CHANNELS + cls), 1)


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
    images = batch_images(t, s).reshape(n * agents, side, side, t.channels)
    hands, goal = hands_and_goals(s)
    goals = np.repeat(goal, agents, axis=0)
    if mode == "flat":
        out = encode_flat(images, hands.reshape(n * agents, HAND_CAPACITY), goals,
                          inverse_scale)
    else:
        out = encode_image(images, goals, image_scale)
    return out.reshape((n, agents) + out.shape[1:])


__all__ = ["batch_images", "batch_observations", "hands_and_goals"]
