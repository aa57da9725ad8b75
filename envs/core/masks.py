"""Action masks: which of the 53 primitive actions would do something, for every agent.

Computed from the rules of :func:`orgteams.envs.core.dynamics.transition` (not by trial
transitions). **Valid** means: played while every other agent waits, the action
yields neither an ``invalid_action`` nor a ``collision`` event. So a move is valid
into a free floor cell or an open doorway nobody stands in; open/close where there
is a closed/open door or container (closing a door also needs its doorway empty);
put from a held slot onto furniture that is open and has room; pick of an existing
slot of open furniture while a hand is free. Wait (id 0) is always valid.

Agents act together, so a valid action can still fail when a teammate acts in the
same tick: two agents stepping into one cell (``collision``), or reaching for the same
object (the lower index gets it; ``invalid_action`` for the other), as
:mod:`orgteams.envs.core.dynamics` documents. ``tests/envs/core/test_masks.py`` checks the
definition against ``transition`` on random states. The batched core restates this
definition over arrays (:mod:`orgteams.envs.vector.masks`, ``vector.functional.core``),
pinned to it by ``tests/envs/vector/test_vector_differential.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY, MAX_SLOTS, NUM_ACTIONS
from orgteams.envs.core.state import HouseholdState, Scene

_FLOOR, _DOOR, _FURNITURE = 0, 1, 2
_MOVE, _OPEN, _CLOSE, _PUT, _PICK = 1, 5, 9, 13, 21


def _neighbours(scene: Scene) -> dict[int, tuple[tuple[int, int, int, int], ...]]:
    """Per standing cell: ``(direction, kind, index, target cell)`` of each neighbour an
    action can address (floor, door or furniture; walls are left out). Per layout."""
    tables = scene.layout.__dict__.setdefault("_scene_tables", {})
    table = tables.get("mask_neighbours")
    if table is None:
        floor, furniture_at, door_at = scene.floor, scene.furniture_at, scene.door_at
        stand = [c for c in range(len(floor)) if floor[c]] + list(door_at)
        table = {}
        for cell in stand:
            row = []
            for d, delta in enumerate(scene.deltas):
                t = cell + delta
                if not 0 <= t < len(floor):
                    continue
                if t in door_at:
                    row.append((d, _DOOR, door_at[t], t))
                elif t in furniture_at:
                    row.append((d, _FURNITURE, furniture_at[t], t))
                elif floor[t]:
                    row.append((d, _FLOOR, -1, t))
            table[cell] = tuple(row)
        tables["mask_neighbours"] = table
    return table


# Events after which masks may differ even though no agent moved.
_CHANGES = frozenset(("picked", "placed", "opened", "closed"))


class MaskCache:
    """:func:`mask_rows` along an episode, reusing the last rows across a tick in which
    no agent moved and nothing was picked, put, opened or closed (most ticks: a bump,
    a wait, a failed pick). Rows are read-only, since one may be handed out on many
    ticks."""

    def __init__(self) -> None:
        self._state: HouseholdState | None = None
        self._agents: list[int] = []
        self._rows: list[np.ndarray] = []

    def __call__(self, state: HouseholdState, agents: list[int],
                 before: HouseholdState | None = None, events: Sequence = ()
                 ) -> list[np.ndarray]:
        """Rows for ``state``; ``before`` and ``events``: the tick that led to it, if any."""
        if (before is not None and before is self._state and agents == self._agents
                and state.agent_pos == before.agent_pos
                and not any(e.type in _CHANGES for e in events)):
            self._state = state
            return self._rows
        self._rows = mask_rows(state, agents)
        self._state, self._agents = state, list(agents)
        return self._rows


def action_masks(state: HouseholdState, agents: list[int] | None = None) -> np.ndarray:
    """``(len(agents), 53)`` int8: 1 where the action is valid (module docstring).

    ``agents``: agent indices (default: all, in index order).
    """
    agents = range(len(state.agent_pos)) if agents is None else agents
    if not agents:
        return np.zeros((0, NUM_ACTIONS), np.int8)
    return np.stack(mask_rows(state, agents))


def mask_rows(state: HouseholdState, agents: Sequence[int]) -> list[np.ndarray]:
    """One read-only ``(53,)`` int8 mask per agent index in ``agents``."""
    scene = state.scene
    neighbours = _neighbours(scene)
    pos, hands, contents = state.agent_pos, state.hands, state.contents
    cont_open, door_open = state.container_open, state.door_open
    is_container, capacity = scene.is_container, scene.capacity
    occupied = set(pos)
    rows = []
    for a in agents:
        out = bytearray(NUM_ACTIONS)
        out[0] = 1  # wait
        held = len(hands[a])
        for d, kind, idx, target in neighbours[pos[a]]:
            if kind == _FLOOR:
                if target not in occupied:
                    out[_MOVE + d] = 1
            elif kind == _DOOR:
                if door_open[idx]:
                    if target not in occupied:  # walk through, or close an empty doorway
                        out[_MOVE + d] = 1
                        out[_CLOSE + d] = 1
                else:
                    out[_OPEN + d] = 1
            else:
                is_open = cont_open[idx]
                if is_container[idx]:
                    out[(_CLOSE if is_open else _OPEN) + d] = 1
                if not is_open:
                    continue
                n = len(contents[idx])
                if n < capacity[idx] and held:
                    at = _PUT + d * HAND_CAPACITY
                    out[at:at + held] = b"\x01" * held
                if held < HAND_CAPACITY and n:
                    at = _PICK + d * MAX_SLOTS
                    n = min(n, MAX_SLOTS)
                    out[at:at + n] = b"\x01" * n
        rows.append(np.frombuffer(bytes(out), np.int8))  # from bytes: read-only
    return rows
