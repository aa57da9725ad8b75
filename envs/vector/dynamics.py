"""The scalar ``transition`` restated over a batch: one tick of ``N`` households at once.

The rules are those of :func:`orgteams.envs.dynamics.transition` (read its docstring);
this module only says them with arrays, in the same three phases:

1. interact: a loop over agent indices (so the lower index acts first, as in the
   scalar loop), each iteration vectorized over the households;
2. move: simultaneous moves resolved as in ``_resolve_moves``: walkable targets,
   lowest index keeps a contested cell, moves into cells whose occupant stays (or
   swaps) are dropped until nothing changes;
3. effects: goal progress recomputed from the contents.

Where a rule is restated here, ``tests/envs/test_vector_differential.py`` pins it: it
steps this core beside the scalar env over random and masked-random joint actions
and compares states, observations, rewards and masks at every tick. Change a rule in
``dynamics.py`` and that test fails until this module follows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orgteams.envs.actions import HAND_CAPACITY, NUM_ACTIONS, Verb
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.tables import DIRECTION, SLOT, VERB, LayoutTables

_MOVE, _OPEN, _CLOSE, _PUT, _PICK = (int(v) for v in (Verb.MOVE, Verb.OPEN, Verb.CLOSE,
                                                      Verb.PUT, Verb.PICK))


@dataclass(eq=False)
class TickEvents:
    """What happened in a batched tick, per household and agent (the scalar events that
    rewards and episode statistics read)."""

    invalid: np.ndarray  # (N, A) bool: an invalid_action event
    collision: np.ndarray  # (N, A) bool: a collision event
    opened_container: np.ndarray  # (N, A) furniture index a container was opened at, or -1
    picked: np.ndarray  # (N, A) object id picked, or -1
    picked_from: np.ndarray  # (N, A) furniture it was picked from, or -1
    objects_moved: np.ndarray  # (N,) bool: something was picked or put


def check_actions(actions: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``actions`` as an (N, A) int64 array; one clear error when it is not one."""
    arr = np.asarray(actions)
    if arr.shape != shape:
        raise ValueError(f"actions must have shape {shape} (num_envs, num_agents), "
                         f"got {arr.shape}")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"actions must be integers in Discrete({NUM_ACTIONS}), "
                         f"got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= NUM_ACTIONS)
    if bad.any():
        n, a = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"env {n}, agent {a}: action {int(arr[n, a])} is outside the "
                         f"action space Discrete({NUM_ACTIONS})")
    return arr.astype(np.int64, copy=False)


def step_batch(t: LayoutTables, s: BatchState, actions: np.ndarray) -> TickEvents:
    """Advance every household one tick in place; ``actions``: checked (N, A) ids."""
    n, agents = s.pos.shape
    rows = np.arange(n)
    verb = VERB[actions]
    direction = DIRECTION[actions]
    slot = SLOT[actions]
    target = s.pos + t.deltas[direction]
    invalid = np.zeros((n, agents), bool)
    opened = np.full((n, agents), -1, np.int64)
    picked = np.full((n, agents), -1, np.int64)
    picked_from = np.full((n, agents), -1, np.int64)
    moved = np.zeros(n, bool)
    start_pos = s.pos  # phase 1 sees the tick's starting cells (no one has moved yet)
    # Phase 1 (scalar: the loop over joint_action). Agent by agent, lower index first.
    interacting = verb >= _OPEN
    for a in np.flatnonzero(interacting.any(axis=0)):
        live = np.flatnonzero(interacting[:, a])
        _interact(t, s, a, live, verb[live, a], slot[live, a], target[live, a],
                  start_pos[live], invalid, opened, picked, picked_from, moved)
    # Phase 2 (scalar: _resolve_moves).
    moving = verb == _MOVE
    collision = np.zeros((n, agents), bool)
    if moving.any():
        _moves(t, s, rows, moving, target, invalid, collision)
    # Phase 3: goal progress (scalar: goal_progress after a pick or put).
    s.tick += 1
    if moved.any():
        idx = np.flatnonzero(moved)
        s.progress[idx] = progress(t, s, idx)
    return TickEvents(invalid, collision, opened, picked, picked_from, moved)


def _interact(t: LayoutTables, s: BatchState, a: int, live: np.ndarray, verb: np.ndarray,
              slot: np.ndarray, target: np.ndarray, start_pos: np.ndarray,
              invalid: np.ndarray, opened: np.ndarray, picked: np.ndarray,
              picked_from: np.ndarray, moved: np.ndarray) -> None:
    """Agent ``a``'s open / close / pick / put in the households ``live``."""
    furn = t.furniture_at[target]
    door = t.door_at[target]
    ok = np.zeros(len(live), bool)
    toggle = (verb == _OPEN) | (verb == _CLOSE)
    want = verb == _OPEN
    # Doors: not already in the wanted state; closing needs an empty doorway.
    at_door = toggle & (door >= 0)
    if at_door.any():
        i = np.flatnonzero(at_door)
        env, d = live[i], door[i]
        occupied = (start_pos[i] == target[i, None]).any(axis=1)
        good = (s.door_open[env, d] != want[i]) & (want[i] | ~occupied)
        s.door_open[env[good], d[good]] = want[i][good]
        ok[i[good]] = True
    # Containers (surfaces cannot be opened or closed).
    at_box = toggle & (door < 0) & (furn >= 0)
    at_box[at_box] = t.is_container[furn[at_box]]
    if at_box.any():
        i = np.flatnonzero(at_box)
        env, f = live[i], furn[i]
        good = s.container_open[env, f] != want[i]
        s.container_open[env[good], f[good]] = want[i][good]
        ok[i[good]] = True
        now_open = good & want[i]
        opened[env[now_open], a] = f[now_open]
    # Pick and put: furniture there and open (containers that lower agents opened this
    # tick count as open, as in the scalar loop's running copy).
    hand = (verb >= _PUT) & (furn >= 0)
    if hand.any():
        i = np.flatnonzero(hand)
        env, f, k = live[i], furn[i], slot[i]
        is_open = s.container_open[env, f]
        n_in = s.count[env, f]
        held = s.held[env, a]
        pick = is_open & (verb[i] == _PICK) & (k < n_in) & (held < HAND_CAPACITY)
        put = is_open & (verb[i] == _PUT) & (k < held) & (n_in < t.capacity[f])
        if pick.any():
            e, ff, kk = env[pick], f[pick], k[pick]
            obj = s.contents[e, ff, kk]
            s.contents[e, ff] = _remove(s.contents[e, ff], kk)
            s.count[e, ff] -= 1
            s.hands[e, a, s.held[e, a]] = obj
            s.held[e, a] += 1
            picked[e, a] = obj
            picked_from[e, a] = ff
            moved[e] = True
        if put.any():
            e, ff, kk = env[put], f[put], k[put]
            obj = s.hands[e, a, kk]
            s.hands[e, a] = _remove(s.hands[e, a], kk)
            s.held[e, a] -= 1
            s.contents[e, ff, s.count[e, ff]] = obj
            s.count[e, ff] += 1
            moved[e] = True
        ok[i] = pick | put
    invalid[live, a] = ~ok


def _remove(rows: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Each row without its entry ``k[j]``, later entries shifted left (the last column
    is always the -1 pad, so the row ends padded)."""
    width = rows.shape[1]
    j = np.arange(width)
    src = np.minimum(j + (j >= k[:, None]), width - 1)
    return np.take_along_axis(rows, src, axis=1)


def _moves(t: LayoutTables, s: BatchState, rows: np.ndarray, moving: np.ndarray,
           target: np.ndarray, invalid: np.ndarray, collision: np.ndarray) -> None:
    """Phase 2 in place: ``s.pos`` after the simultaneous moves."""
    pos = s.pos
    agents = pos.shape[1]
    door = t.door_at[target]
    walkable = t.floor[target] | ((door >= 0) & s.door_open[rows[:, None], np.maximum(door, 0)])
    invalid |= moving & ~walkable  # "cannot walk there" (doors as phase 1 left them)
    want = moving & walkable
    # Same target: the lowest agent index keeps its claim.
    same = (target[:, :, None] == target[:, None, :]) & want[:, None, :]
    lower = np.tri(agents, agents, -1, dtype=bool)  # [a, b]: b < a
    contested = want & (same & lower).any(axis=2)
    collision |= contested
    claim = want & ~contested
    # Moves into a cell whose occupant stays (or swaps) are dropped until nothing changes.
    at = target[:, :, None] == pos[:, None, :]  # [a, b]: b stands on a's target
    has_occupant = at.any(axis=2)
    occupant = at.argmax(axis=2)
    occupant_target = np.take_along_axis(target, occupant, axis=1)
    swap = occupant_target == pos
    alive = claim
    for _ in range(agents):
        stays = ~np.take_along_axis(alive, occupant, axis=1) | swap
        keep = alive & ~(has_occupant & stays)
        if (keep == alive).all():
            break
        alive = keep
    collision |= claim & ~alive
    s.pos = np.where(alive, target, pos)


def progress(t: LayoutTables, s: BatchState, idx: np.ndarray) -> np.ndarray:
    """Satisfied units per goal row of households ``idx`` (scalar: ``goal_progress``)."""
    contents = s.contents[idx]  # (M, F, C)
    cls = np.where(contents >= 0, np.take_along_axis(
        s.object_class[idx], np.maximum(contents, 0).reshape(len(idx), -1), axis=1
    ).reshape(contents.shape), -1)
    goal_cls, goal_target = s.goal_class[idx], s.goal_target[idx]
    on_target = t.furniture_type[None, None, :] == goal_target[:, :, None]  # (M, G, F)
    match = (cls[:, None, :, :] == goal_cls[:, :, None, None]) & on_target[..., None]
    have = match.sum(axis=(2, 3))
    return np.minimum(have, s.goal_count[idx])


__all__ = ["step_batch", "check_actions", "progress", "TickEvents"]
