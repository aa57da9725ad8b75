"""The scalar ``transition`` restated over a batch: one tick of ``N`` households at once.

The rules are those of :func:`orgteams.envs.core.dynamics.transition` (read its docstring);
this module only says them with arrays, in the same three phases:

1. interact: every interaction of the batch at once, except that interactions of one
   household on the same door or furniture run in rounds, the lower agent index
   first (the scalar loop's order; interactions on different things commute);
2. move: simultaneous moves resolved as in ``_resolve_moves``, in the households
   where someone moves: walkable targets, lowest index keeps a contested cell, moves
   into cells whose occupant stays (or swaps) are dropped until nothing changes;
3. effects: goal progress recomputed from the contents.

The tick also reports which households changed (``TickEvents.changed``: some action
took effect), so that observations and masks are rebuilt only there.

Where a rule is restated here, ``tests/envs/vector/test_vector_differential.py`` pins it: it
steps this core beside the scalar env over random and masked-random joint actions
and compares states, observations, rewards and masks at every tick. Change a rule in
``dynamics.py`` and that test fails until this module follows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY, NUM_ACTIONS, Verb
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
    # (N,) bool: the state (all but the tick) changed: some agent's action took effect
    # (a move, or an open / close / pick / put that was not invalid). None: not known.
    changed: np.ndarray | None = None


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
    verb = VERB.take(actions)
    target = s.pos + t.deltas.take(DIRECTION.take(actions))
    invalid = verb >= _OPEN  # an interaction is invalid unless phase 1 says it succeeded
    opened = np.full((n, agents), -1, np.int64)
    picked = np.full((n, agents), -1, np.int64)
    picked_from = np.full((n, agents), -1, np.int64)
    objects_moved = np.zeros(n, bool)
    changed = np.zeros(n, bool)
    # Phase 1 (scalar: the loop over joint_action).
    acting = np.flatnonzero(invalid)  # household * A + agent, in the scalar loop's order
    if len(acting):
        _interact(t, s, acting, verb.reshape(-1)[acting],
                  SLOT.take(actions.reshape(-1)[acting]), target.reshape(-1)[acting],
                  invalid, (opened, picked, picked_from), objects_moved, changed)
    # Phase 2 (scalar: _resolve_moves), in the households where someone moves.
    moving = verb == _MOVE
    collision = np.zeros((n, agents), bool)
    movers = np.flatnonzero(moving.any(axis=1))
    if len(movers):
        _moves(t, s, movers, moving, target, invalid, collision, changed)
    # Phase 3: goal progress (scalar: goal_progress after a pick or put).
    s.tick += 1
    idx = np.flatnonzero(objects_moved)
    if len(idx):
        s.progress[idx] = progress(t, s, idx)
    return TickEvents(invalid, collision, opened, picked, picked_from, objects_moved, changed)


def _interact(t: LayoutTables, s: BatchState, acting: np.ndarray, verb: np.ndarray,
              slot: np.ndarray, target: np.ndarray, invalid: np.ndarray,
              out: tuple[np.ndarray, np.ndarray, np.ndarray], objects_moved: np.ndarray,
              changed: np.ndarray) -> None:
    """Phase 1 in place for the interactions ``acting`` (flat agent indices, ascending).

    The scalar loop runs agent by agent. An interaction reads and writes only the door
    or the furniture it targets (and its own hands; closing a door also reads where
    agents stand, which phase 1 does not change), so interactions on different things
    commute: they run together, in rounds, each round holding at most one interaction
    per (household, thing), the lower agent index in the earlier round.
    """
    agents = s.pos.shape[1]
    doors = s.door_open.shape[1]
    furn = t.furniture_at.take(target)
    door = t.door_at.take(target)
    toggle = verb <= _CLOSE  # open / close (else put / pick)
    # The thing each interaction acts on: door d as d, furniture f as doors + f; -1 where
    # it fails whatever the state (nothing to open there, no furniture to reach into).
    box = np.where(furn >= 0, t.is_container.take(furn, mode="clip"), False)
    thing = np.where(toggle, np.where(door >= 0, door, np.where(box, doors + furn, -1)),
                     np.where(furn >= 0, doors + furn, -1))
    keep = thing >= 0
    if not keep.all():
        acting, verb, slot, target, furn, door, thing, toggle = (
            x[keep] for x in (acting, verb, slot, target, furn, door, thing, toggle))
    if not len(acting):
        return
    env = acting // agents
    key = env * (doors + len(t.capacity)) + thing
    order = np.argsort(key, kind="stable")  # stable: agent order within a thing
    same = key[order[1:]] == key[order[:-1]]
    if not same.any():
        _interact_round(t, s, env, acting - env * agents, verb, slot, target, furn, door,
                        toggle, acting, invalid, out, objects_moved, changed)
        return
    # Rank of each interaction among those on the same thing: its round.
    first = np.flatnonzero(np.concatenate([[True], ~same]))
    size = np.diff(np.append(first, len(key)))
    rank = np.empty(len(key), np.int64)
    rank[order] = np.arange(len(key)) - np.repeat(first, size)
    for r in range(int(rank.max()) + 1):
        i = np.flatnonzero(rank == r)
        _interact_round(t, s, env[i], acting[i] - env[i] * agents, verb[i], slot[i],
                        target[i], furn[i], door[i], toggle[i], acting[i], invalid, out,
                        objects_moved, changed)


def _interact_round(t: LayoutTables, s: BatchState, env: np.ndarray, agent: np.ndarray,
                    verb: np.ndarray, slot: np.ndarray, target: np.ndarray, furn: np.ndarray,
                    door: np.ndarray, toggle: np.ndarray, flat: np.ndarray,
                    invalid: np.ndarray, out: tuple[np.ndarray, np.ndarray, np.ndarray],
                    objects_moved: np.ndarray, changed: np.ndarray) -> None:
    """Interactions on distinct (household, thing) pairs: the scalar rules, at once."""
    opened, picked, picked_from = (x.reshape(-1) for x in out)
    ok = np.zeros(len(env), bool)
    want = verb == _OPEN
    # Doors: not already in the wanted state; closing needs an empty doorway.
    at_door = toggle & (door >= 0)
    if at_door.any():
        i = np.flatnonzero(at_door)
        e, d, w = env[i], door[i], want[i]
        good = s.door_open[e, d] != w
        if not w.all():
            good &= w | ~(s.pos[e] == target[i, None]).any(axis=1)
        s.door_open[e[good], d[good]] = w[good]
        ok[i[good]] = True
    # Containers (``thing`` left only containers among the other toggles).
    at_box = toggle & (door < 0)
    if at_box.any():
        i = np.flatnonzero(at_box)
        e, f, w = env[i], furn[i], want[i]
        good = s.container_open[e, f] != w
        s.container_open[e[good], f[good]] = w[good]
        ok[i[good]] = True
        now_open = good & w
        opened[flat[i[now_open]]] = f[now_open]
    # Pick and put: the furniture must be open (containers that lower agents opened
    # this tick count as open: they ran in an earlier round).
    hand = ~toggle
    if hand.any():
        i = np.flatnonzero(hand)
        e, f, k, a = env[i], furn[i], slot[i], agent[i]
        is_open = s.container_open[e, f]
        n_in = s.count[e, f]
        held = s.held[e, a]
        is_pick = verb[i] == _PICK
        pick = is_open & is_pick & (k < n_in) & (held < HAND_CAPACITY)
        put = is_open & ~is_pick & (k < held) & (n_in < t.capacity.take(f))
        if pick.any():
            j = np.flatnonzero(pick)
            pe, pf, pk, pa, ph = e[j], f[j], k[j], a[j], held[j]
            obj = s.contents[pe, pf, pk]
            s.contents[pe, pf] = _remove(s.contents[pe, pf], pk)
            s.count[pe, pf] = n_in[j] - 1
            s.hands[pe, pa, ph] = obj
            s.held[pe, pa] = ph + 1
            picked[flat[i[j]]] = obj
            picked_from[flat[i[j]]] = pf
        if put.any():
            j = np.flatnonzero(put)
            pe, pf, pk, pa, pn = e[j], f[j], k[j], a[j], n_in[j]
            obj = s.hands[pe, pa, pk]
            s.hands[pe, pa] = _remove(s.hands[pe, pa], pk)
            s.held[pe, pa] = held[j] - 1
            s.contents[pe, pf, pn] = obj
            s.count[pe, pf] = pn + 1
        moved = pick | put
        ok[i[moved]] = True
        objects_moved[env[i[moved]]] = True
    invalid.reshape(-1)[flat[ok]] = False
    changed[env[ok]] = True


def _remove(rows: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Each row without its entry ``k[j]``, later entries shifted left (the last column
    is always the -1 pad, so the row ends padded)."""
    width = rows.shape[1]
    j = np.arange(width)
    src = np.minimum(j + (j >= k[:, None]), width - 1)
    return rows[np.arange(len(rows))[:, None], src]


def _moves(t: LayoutTables, s: BatchState, hh: np.ndarray, moving: np.ndarray,
           target: np.ndarray, invalid: np.ndarray, collision: np.ndarray,
           changed: np.ndarray) -> None:
    """Phase 2 in place for the households ``hh``: ``s.pos`` after the simultaneous moves
    (doors as phase 1 left them)."""
    n, agents = s.pos.shape
    every = len(hh) == n
    pos, target, moving = (x if every else x[hh] for x in (s.pos, target, moving))
    walkable = t.floor.take(target)
    door = t.door_at.take(target)
    r, c = np.nonzero(door >= 0)
    if len(r):
        walkable[r, c] |= s.door_open[hh[r], door[r, c]]
    want = moving & walkable
    # Same target: the lowest agent index keeps its claim.
    lower = np.tri(agents, agents, -1, dtype=bool)  # [a, b]: b < a
    same = (target[:, :, None] == target[:, None, :]) & want[:, None, :] & lower
    contested = want & same.any(axis=2)
    claim = want & ~contested
    # Moves into a cell whose occupant stays (or swaps) are dropped until nothing changes.
    at = target[:, :, None] == pos[:, None, :]  # [a, b]: b stands on a's target
    has_occupant = at.any(axis=2)
    occupant = (at.argmax(axis=2) + np.arange(len(pos))[:, None] * agents).reshape(-1)
    swap = target.reshape(-1)[occupant].reshape(pos.shape) == pos
    alive = claim
    for _ in range(agents):
        stays = ~alive.reshape(-1)[occupant].reshape(pos.shape) | swap
        drop = alive & has_occupant & stays
        if not drop.any():
            break
        alive = alive & ~drop
    blocked = contested | (claim & ~alive)
    invalid_moves = moving & ~walkable
    new_pos = np.where(alive, target, pos)
    went = alive.any(axis=1)
    if every:
        s.pos = new_pos
        invalid |= invalid_moves
        collision |= blocked
        changed |= went
    else:
        s.pos[hh] = new_pos
        invalid[hh] |= invalid_moves
        collision[hh] = blocked
        changed[hh] |= went


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
