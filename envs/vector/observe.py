"""Observations of a batch: the ``rl_obs`` planes of every agent, then the scalar encoders.

The scalar env builds the array view (:mod:`orgteams.envs.observe.array_obs`) and
re-encodes it as 38 planes per cell (:func:`orgteams.envs.observe.rl_obs.planes`). The batch
builds the planes of all ``N x A`` agents directly: the still part of each window
(tiles, furniture types, the self mark: :attr:`LayoutTables.static_planes`, encoded
by the scalar ``planes``) gathered by the agent's cell, then what changes written
where the agent sees it: door and container tiles, teammates, object counts (on
surfaces, in open containers, in the hands of agents standing there) and the goal
rows' planes. The ``flat`` and ``image`` encodings of the planes are the scalar ones
(:func:`~orgteams.envs.observe.rl_obs.flat_from_planes`, whose parts it writes into one
array, and ``image_from_planes``).

This restates the plane rules of ``rl_obs.planes`` and the visibility of
``observations.py``; ``tests/envs/vector/test_vector_differential.py`` compares the result
with the scalar env's observations at every tick.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.observe.rl_obs import AGENT_PLANES, TILE_PLANES, flat_tail, image_from_planes
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.tables import LayoutTables

_TEAMMATE = TILE_PLANES + 1  # agent planes: self, teammate


def dynamic_entries(t: LayoutTables, s: BatchState
                    ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """What changes in the planes, as ``(ones, counts)``: each ``(env, agent, slot,
    plane)`` index arrays. ``ones`` are set to 1 (door and container tiles, teammates,
    goal targets); each entry of ``counts`` adds 1 (an object seen there)."""
    n, agents = s.pos.shape
    pos = s.pos
    objects_plane = TILE_PLANES + AGENT_PLANES + t.num_furniture_types
    goal_plane = objects_plane + 1
    ones = []
    # Doors and containers: the tile one-hot of "closed" + open flag, where seen.
    stand = t.stand_index[pos]
    if t.switch_slot.shape[1]:
        boxes, closed = t.switch_planes
        slot = t.switch_slot[stand]  # (N, A, D + containers)
        flags = np.concatenate([s.door_open, s.container_open[:, boxes]], axis=1)
        e, a, j = np.nonzero(slot >= 0)
        ones.append((e, a, slot[e, a, j], closed[j] + flags[e, j]))
    # Teammates where seen; the self mark is in the static planes.
    cell_slot = t.cell_slot
    seen = t.window_slot(pos[:, :, None], pos[:, None, :]) if cell_slot is None \
        else cell_slot[stand[:, :, None], pos[:, None, :]]  # (N, A viewer, A other)
    others = (seen >= 0) & ~np.eye(agents, dtype=bool)
    e, a, b = np.nonzero(others)
    ones.append((e, a, seen[e, a, b], np.full(len(e), _TEAMMATE)))
    # Goal targets: furniture of a row's target type, while the row misses units.
    fslot = t.furniture_slot[stand]  # (N, A, F)
    missing = (s.goal_count > s.progress) & (s.goal_class >= 0)  # (N, G)
    r, g = np.nonzero(missing)
    wanted_type = np.zeros((n, t.num_furniture_types + 1), bool)
    wanted_type[r, s.goal_target[r, g]] = True
    e, a, f = np.nonzero((fslot >= 0) & wanted_type[:, t.furniture_type][:, None, :])
    i, g = np.nonzero((s.goal_target[e] == t.furniture_type[f][:, None]) & missing[e])
    e, a, f = e[i], a[i], f[i]
    ones.append((e, a, fslot[e, a, f], goal_plane + 1 + 2 * g))
    # Objects: on surfaces and in open containers, and held by agents, where seen; each
    # counts on the objects plane and on the count plane of every goal row of its class.
    e, a, f = np.nonzero((fslot >= 0) & (s.container_open & (s.count > 0))[:, None, :])
    inside = s.contents[e, f]  # (M, cap + 1), -1 pads
    m, k = np.nonzero(inside >= 0)
    parts = [(e[m], a[m], fslot[e, a, f][m], inside[m, k])]
    e, a, b = np.nonzero((seen >= 0) & (s.held[:, None, :] > 0))
    for h in range(HAND_CAPACITY):
        has = s.held[e, b] > h
        ee, aa, bb = e[has], a[has], b[has]
        parts.append((ee, aa, seen[ee, aa, bb], s.hands[ee, bb, h]))
    e, a, slot, obj = (np.concatenate(x) for x in zip(*parts))
    cls = s.object_class[e, obj]
    i, g = np.nonzero(s.goal_class[e] == cls[:, None])
    counts = (np.concatenate([e, e[i]]), np.concatenate([a, a[i]]),
              np.concatenate([slot, slot[i]]),
              np.concatenate([np.full(len(e), objects_plane), goal_plane + 2 * g]))
    return tuple(np.concatenate(x) for x in zip(*ones)), counts


def batch_planes(t: LayoutTables, s: BatchState) -> np.ndarray:
    """``(N, A, side * side, 38)`` uint8 planes of every agent (``rl_obs.planes``)."""
    out = t.static_planes[t.stand_index[s.pos]]
    ones, counts = dynamic_entries(t, s)
    out[ones] = 1
    np.add.at(out, counts, 1)
    return out


def flat_observations(t: LayoutTables, s: BatchState, inverse_scale: np.ndarray,
                      out: np.ndarray | None = None) -> np.ndarray:
    """``(N, A, D)`` float32 ``obs_mode="flat"`` observations.

    ``rl_obs.flat_from_planes`` of :func:`batch_planes`, written straight in float32:
    the static planes' rows (kept as float32 when small enough) gathered into the
    output, the ones and the scaled counts written in, then the hands and goal rows.
    The same products as the scalar encoder, so the same floats. ``out``: an
    ``(N, A, D)`` float32 array to write into instead of a new one.
    """
    n, agents = s.pos.shape
    d = len(inverse_scale)
    grid = t.static_planes.shape[1] * t.static_planes.shape[2]
    out = np.empty((n * agents, d), np.float32) if out is None else out.reshape(n * agents, d)
    rows = t.stand_index[s.pos].reshape(-1)
    table = t.static_flat()
    if table is not None:  # full rows (the tail is filled below)
        table.take(rows, axis=0, out=out, mode="clip")
    else:
        np.copyto(out[:, :grid], t.static_planes.reshape(len(t.static_planes), -1)[rows])
    ones, counts = dynamic_entries(t, s)
    planes = t.static_planes.shape[2]
    flat = out.reshape(-1)
    e, a, slot, plane = ones
    flat[((e * agents + a) * d + slot * planes + plane)] = 1.0  # binary planes: scale 1
    e, a, slot, plane = counts
    at, times = np.unique((e * agents + a) * d + slot * planes + plane, return_counts=True)
    flat[at] = times.astype(np.uint8) * inverse_scale[at % d]
    hands, goal = hands_and_goals(s)
    tail = flat_tail(hands.reshape(n * agents, HAND_CAPACITY), np.repeat(goal, agents, axis=0))
    np.multiply(tail, inverse_scale[grid:], out=out[:, grid:])
    return out.reshape(n, agents, d)


def hands_and_goals(s: BatchState, idx: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(N, A, 2)`` hands (class + 1, 0 empty) and ``(N, 5, 3)`` goal rows (of the
    households ``idx`` only, in that order, when given)."""
    if idx is None:
        idx = np.arange(len(s.pos))
    held = s.hands[idx, :, :HAND_CAPACITY]
    cls = s.object_class[idx[:, None, None], np.maximum(held, 0)]
    hands = np.where(held >= 0, cls + 1, 0).astype(np.uint8)
    goal = np.stack([s.goal_class[idx] + 1, s.goal_target[idx] + 1,
                     s.goal_count[idx] - s.progress[idx]], axis=-1).astype(np.uint8)
    return hands, goal


def batch_observations(t: LayoutTables, s: BatchState, mode: str, inverse_scale: np.ndarray
                       | None, image_scale: int) -> np.ndarray:
    """``(N, A, ...)`` observations in ``mode`` ``"flat"`` or ``"image"``."""
    if mode == "flat":
        return flat_observations(t, s, inverse_scale)
    n, agents = s.pos.shape
    side = 2 * t.radius + 1
    out = image_from_planes(batch_planes(t, s).reshape(n * agents, side, side, -1),
                            image_scale)
    return out.reshape((n, agents) + out.shape[1:])


__all__ = ["batch_planes", "batch_observations", "flat_observations", "dynamic_entries",
           "hands_and_goals"]
