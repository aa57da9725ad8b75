"""Flat observations kept in one persistent array and updated tick by tick.

:func:`~orgteams.envs.vector.observe.flat_observations` rebuilds every window each
tick: ``N x A x D`` entries (35 KB per agent in float32), and that memory traffic
dominates a step. Most of a window does not change between ticks: an agent that
stayed on its cell sees the same static planes (tiles, furniture, self mark). So
:class:`FlatBuffer` keeps the last observations and, each tick,

* puts back the static value of every entry that last tick's dynamic part wrote
  (door and container flags, teammates, goal targets, object counts),
* gathers the whole static window of the agents whose cell changed (and of every
  agent on the first call),
* writes this tick's dynamic entries, and the hands / goal tail of the households
  whose hands or goal rows may have changed (a pick or put, a new episode).

The result is the same array as ``flat_observations`` (``tests/envs/
test_vector_differential.py`` compares it with the scalar env at every tick). A
household whose state (all but the tick) is the same as at the last call
(``TickEvents.changed``: no action of the tick took effect there) keeps its windows
untouched. With ``dtype=np.uint8`` the entries are the raw plane values (counts as
counts, no scaling): ``round(flat * flat_scale(...))`` of the float32 observation.

Each :meth:`write` also logs what it wrote (entries and rows, :meth:`changes_since`),
so that ``copy=True`` can bring a copy handed out a few ticks ago up to date by
copying only those (:class:`~orgteams.envs.vector.outputs.OutputPool`).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.observe.rl_obs import flat_tail
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.observe import dynamic_entries, hands_and_goals
from orgteams.envs.vector.tables import LayoutTables

FLAT_DTYPES = (np.dtype(np.float32), np.dtype(np.uint8))
LOGGED_WRITES = 4  # writes remembered by changes_since (a copy older than that: all)


def flat_dtype(obs_dtype: Any) -> np.dtype:
    """``obs_dtype`` as one of :data:`FLAT_DTYPES`.

    Raises:
        ValueError: Anything else (one line naming the value).
    """
    try:
        dtype = np.dtype(obs_dtype)
    except TypeError:
        dtype = None
    if dtype not in FLAT_DTYPES:
        raise ValueError(f"obs_dtype must be np.float32 or np.uint8, got {obs_dtype!r}")
    return dtype


class FlatBuffer:
    """``(N, A, D)`` flat observations of one batch, updated in place by :meth:`write`."""

    def __init__(self, t: LayoutTables, inverse_scale: np.ndarray, num_envs: int,
                 num_agents: int, dtype: type | np.dtype = np.float32):
        self.t, self.dtype = t, np.dtype(dtype)
        self.agents, self.d = num_agents, len(inverse_scale)
        self.inverse = inverse_scale
        rows, cells, planes = t.static_planes.shape
        self.grid = cells * planes
        self.static = t.static_planes.reshape(rows, self.grid)
        self.array = np.zeros((num_envs * num_agents, self.d), self.dtype)
        self.rows = np.full(num_envs * num_agents, -1)  # static row in the buffer, -1: none
        self.dirty = np.empty(0, np.intp)  # flat indices the dynamic part wrote last
        self.version = 0  # writes so far
        # (version, entries, grid rows, tail rows) of the last writes; entries: flat
        # indices; grid rows: rows whose planes were rewritten whole; None: everything.
        self.log: deque = deque(maxlen=LOGGED_WRITES)

    def write(self, s: BatchState, changed: np.ndarray | None = None,
              tail: np.ndarray | None = None) -> np.ndarray:
        """This tick's observations of ``s`` (same households as the buffer); the
        returned array is the buffer itself, reshaped ``(N, A, D)``. ``changed``:
        ``(N,)`` bool, the households whose state changed since the last call
        (``TickEvents.changed``; the others are kept as they are); None: all.
        ``tail``: ``(N,)`` bool, those of them whose hands or goal rows may have
        changed (``TickEvents.objects_moved`` and new episodes); None: ``changed``."""
        t, d, agents = self.t, self.d, self.agents
        n = len(s.pos)
        flat = self.array.reshape(-1)
        everything = changed is None or self.rows[0] < 0
        if everything:  # and on the first call
            changed = tail = np.ones(n, bool)
        hh = np.flatnonzero(changed)
        entries, grid_rows = [], np.empty(0, np.intp)
        if len(hh):
            rows = t.stand_index[s.pos].reshape(-1)
            kept = self.dirty
            if len(self.dirty):  # back to the static value (of the current row)
                mine = changed[self.dirty // (agents * d)]
                at, kept = self.dirty[mine], self.dirty[~mine]
                flat[at] = self.static[rows[at // d], at % d]
                entries.append(at)
            moved = np.flatnonzero(rows != self.rows)  # all in changed households
            grid_rows = moved
            if len(moved):
                self.array[moved, :self.grid] = self.static[rows[moved]]
            self.rows = rows
            part = s if len(hh) == n else s.take(hh)
            ones, counts = dynamic_entries(t, part)
            planes = t.static_planes.shape[2]
            e, a, slot, plane = ones
            one_at = (hh[e] * agents + a) * d + slot * planes + plane
            flat[one_at] = 1  # binary planes: scale 1
            e, a, slot, plane = counts
            at, times = np.unique((hh[e] * agents + a) * d + slot * planes + plane,
                                  return_counts=True)
            raw = times.astype(np.uint8)
            flat[at] = raw if self.dtype == np.uint8 else raw * self.inverse[at % d]
            self.dirty = np.concatenate([kept, one_at, at])
            entries += [one_at, at]
        tail_rows = self._write_tail(s, np.flatnonzero(changed if tail is None else tail))
        self.version += 1
        self.log.append((self.version, None) if everything else (
            self.version, np.concatenate(entries) if entries else np.empty(0, np.intp),
            grid_rows, tail_rows))
        return self.array.reshape(n, agents, d)

    def changes_since(self, version: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
        """What the writes after ``version`` wrote: (flat indices, possibly repeated; rows
        whose planes, rows whose hands / goal tail were rewritten; the planes' width); None
        when one of them rewrote everything or ``version`` is older than the log."""
        later = [rec for rec in self.log if rec[0] > version]
        if len(later) != self.version - version or any(rec[1] is None for rec in later):
            return None
        none = np.empty(0, np.intp)
        if not later:
            return none, none, none, self.grid
        entries = np.concatenate([rec[1] for rec in later])
        # Rows repeat when an agent walks on consecutive ticks: each is copied once.
        grid_rows, tail_rows = (np.unique(np.concatenate([rec[k] for rec in later]))
                                for k in (2, 3))
        return entries, grid_rows, tail_rows, self.grid

    def _write_tail(self, s: BatchState, idx: np.ndarray) -> np.ndarray:
        """Hands and goal rows of the households ``idx``, rewritten; returns their rows."""
        if not len(idx):
            return np.empty(0, np.intp)
        agents = self.agents
        hands, goal = hands_and_goals(s, idx)
        rows = (idx[:, None] * agents + np.arange(agents)).reshape(-1)
        tail = flat_tail(hands.reshape(-1, HAND_CAPACITY), np.repeat(goal, agents, axis=0))
        self.array[rows, self.grid:] = tail if self.dtype == np.uint8 \
            else tail * self.inverse[self.grid:]
        return rows


def to_uint8(flat: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The ``obs_dtype=np.uint8`` form of float32 flat observations: raw plane values
    (``scale``: :func:`~orgteams.envs.observe.rl_obs.flat_scale`)."""
    return np.rint(flat * scale).astype(np.uint8)


__all__ = ["FlatBuffer", "FLAT_DTYPES", "flat_dtype", "to_uint8"]
