"""Action masks of a batch: :func:`orgteams.envs.core.masks.mask_rows` restated with arrays.

The definition is the scalar one (read :mod:`orgteams.envs.core.masks`): valid means
"played while every other agent waits, it yields neither ``invalid_action`` nor
``collision``". ``tests/envs/vector/test_vector_differential.py`` compares these masks with
the scalar env's at every tick.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY, MAX_SLOTS, NUM_ACTIONS
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.tables import K_DOOR, K_FLOOR, K_FURNITURE, LayoutTables

# Row m: the first m entries 1 (hand slots k < held, content slots k < count): the
# put / pick mask bits of one direction as one gather (no (N, A, 4, k) broadcasts).
_FIRST_HAND = (np.arange(HAND_CAPACITY) < np.arange(HAND_CAPACITY + 1)[:, None]).astype(np.int8)
_FIRST_SLOTS = (np.arange(MAX_SLOTS) < np.arange(MAX_SLOTS + 1)[:, None]).astype(np.int8)


def batch_masks(t: LayoutTables, s: BatchState, idx: np.ndarray | None = None) -> np.ndarray:
    """``(N, A, 53)`` int8 masks of every agent of every household (of the households
    ``idx`` only, in that order, when given: no copy of their state)."""
    pos = s.pos if idx is None else s.pos[idx]
    n, agents = pos.shape
    env = (np.arange(n) if idx is None else idx)[:, None, None]
    kind = t.neighbour_kind[pos]  # (N, A, 4)
    index = t.neighbour_index[pos]
    cell = t.neighbour_cell[pos]
    if agents <= 8:  # a few comparisons are cheaper than a reduction over a short axis
        taken = cell == pos[:, None, None, 0]
        for b in range(1, agents):
            taken |= cell == pos[:, None, None, b]
        free = ~taken
    else:
        free = ~(cell[..., None] == pos[:, None, None, :]).any(axis=-1)
    door = kind == K_DOOR
    door_open = door & s.door_open[env, np.minimum(index, s.door_open.shape[1] - 1)] \
        if s.door_open.shape[1] else door
    furn = kind == K_FURNITURE
    f = np.where(furn, index, 0)
    is_box = furn & t.is_container[f]
    is_open = furn & s.container_open[env, f]
    held = (s.held if idx is None else s.held[idx])[:, :, None]
    n_in = s.count[env, f]
    out = np.empty((n, agents, NUM_ACTIONS), np.int8)
    out[..., 0] = 1  # wait
    out[..., 1:5] = (((kind == K_FLOOR) | door_open) & free)
    out[..., 5:9] = (door & ~door_open) | (is_box & ~is_open)
    out[..., 9:13] = (door_open & free) | (is_box & is_open)
    put = np.where(is_open & (n_in < t.capacity[f]), held, 0)  # hand slots to put from
    out[..., 13:21] = _FIRST_HAND[put].reshape(n, agents, 4 * HAND_CAPACITY)
    pick = np.where(is_open & (held < HAND_CAPACITY), np.minimum(n_in, MAX_SLOTS), 0)
    out[..., 21:] = _FIRST_SLOTS[pick].reshape(n, agents, 4 * MAX_SLOTS)
    return out


__all__ = ["batch_masks"]
