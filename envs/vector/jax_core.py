"""The batched core in JAX (``backend="jax"``, the optional ``jax`` extra): ``jit`` + ``vmap``.

One household's tick, masks and flat observations written as pure functions of
fixed-shape arrays, ``vmap``-ed over the households and ``jit``-compiled once per
batch size. The rules are those of the numpy core (:mod:`.dynamics`, :mod:`.masks`,
:mod:`.observe`, which restate the scalar ones) in the form JAX needs: no data-dependent
shapes, so every "where it applies" is a ``where`` or a scatter with ``mode="drop"``.
``tests/envs/test_vector_differential.py`` runs the same comparison with the scalar
env on this backend. Episodes are drawn, and rewards computed, by the numpy side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:  # the extra is not installed
    raise ImportError("backend='jax' needs JAX: pip install 'orgteams[jax]'") from exc

from orgteams.envs.actions import HAND_CAPACITY, MAX_SLOTS, NUM_ACTIONS, Verb
from orgteams.envs.observations import T_CLOSED, T_DOOR_CLOSED
from orgteams.envs.rl_obs import AGENT_PLANES, TILE_PLANES
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.dynamics import TickEvents
from orgteams.envs.vector.tables import (
    DIRECTION,
    K_DOOR,
    K_FLOOR,
    K_FURNITURE,
    SLOT,
    VERB,
    LayoutTables,
)

_MOVE, _OPEN, _CLOSE, _PUT, _PICK = (int(v) for v in (Verb.MOVE, Verb.OPEN, Verb.CLOSE,
                                                      Verb.PUT, Verb.PICK))
_DYNAMIC = ("tick", "pos", "hands", "held", "contents", "count", "container_open",
            "door_open", "progress")
_STATIC = ("object_class", "goal_class", "goal_target", "goal_count")


class JaxCore:
    """``step``, ``masks`` and ``flat`` of one layout's households, compiled."""

    def __init__(self, t: LayoutTables, inverse_scale: np.ndarray | None):
        self.t = t
        boxes = np.flatnonzero(t.is_container)
        c = {k: _device(v) for k, v in dict(
            deltas=t.deltas, floor=t.floor, door_at=t.door_at, furniture_at=t.furniture_at,
            is_container=t.is_container, capacity=t.capacity, ftype=t.furniture_type,
            kind=t.neighbour_kind, index=t.neighbour_index, ncell=t.neighbour_cell,
            stand=t.stand_index, static=t.static_planes.reshape(len(t.static_planes), -1),
            fslot=t.furniture_slot, sslot=t.switch_slot, view=t.view_of_cell,
            visible=t.visible, boxes=boxes,
            closed=np.array([T_DOOR_CLOSED] * len(t.door_cell) + [T_CLOSED] * len(boxes)),
            verb=VERB.astype(np.int64), direction=DIRECTION, slot=SLOT).items()}
        self.c = c
        self.inverse = None if inverse_scale is None else _device(inverse_scale)
        self._step = jax.jit(jax.vmap(self._step_one))
        self._masks = jax.jit(jax.vmap(self._masks_one))
        self._flat = jax.jit(jax.vmap(self._flat_one))

    # ---- the numpy side ----
    def step(self, s: BatchState, actions: np.ndarray) -> TickEvents:
        """One tick of every household of ``s`` in place (as ``dynamics.step_batch``)."""
        new, ev = self._step(self._arrays(s, _DYNAMIC + _STATIC), jnp.asarray(actions))
        for k, v in new.items():
            setattr(s, k, np.asarray(v).astype(getattr(s, k).dtype))
        invalid, collision, opened, picked, picked_from, moved = (
            np.asarray(x).astype(np.int64 if x.dtype == jnp.int32 else x.dtype) for x in ev)
        return TickEvents(invalid, collision, opened, picked, picked_from, moved)

    def masks(self, s: BatchState) -> np.ndarray:
        return np.array(self._masks(self._arrays(s, _DYNAMIC + _STATIC)))

    def flat(self, s: BatchState) -> np.ndarray:
        return np.array(self._flat(self._arrays(s, _DYNAMIC + _STATIC)))

    @staticmethod
    def _arrays(s: BatchState, names: tuple[str, ...]) -> dict[str, Any]:
        return {k: _device(getattr(s, k)) for k in names}

    # ---- one household ----
    def _step_one(self, st: dict, acts: jnp.ndarray):
        c = self.c
        agents = st["pos"].shape[0]
        verb, d, k = c["verb"][acts], c["direction"][acts], c["slot"][acts]
        start = st["pos"]
        target = start + c["deltas"][d]
        door_open, box_open = st["door_open"], st["container_open"]
        contents, count, hands, held = st["contents"], st["count"], st["hands"], st["held"]
        width = contents.shape[1]
        j = jnp.arange(width)
        hj = jnp.arange(hands.shape[1])
        invalid, opened, picked, picked_from = [], [], [], []
        moved = jnp.array(False)
        # Phase 1: agent by agent, lower index first (dynamics._interact).
        for a in range(agents):
            v, t = verb[a], target[a]
            furn, door = c["furniture_at"][t], c["door_at"][t]
            f, dr = jnp.maximum(furn, 0), jnp.maximum(door, 0)
            toggle = (v == _OPEN) | (v == _CLOSE)
            want = v == _OPEN
            occupied = (start == t).any()
            if door_open.shape[0]:
                door_ok = toggle & (door >= 0) & (door_open[dr] != want) & (want | ~occupied)
                door_open = door_open.at[dr].set(jnp.where(door_ok, want, door_open[dr]))
            else:
                door_ok = jnp.array(False)
            box_ok = toggle & (door < 0) & (furn >= 0) & c["is_container"][f] \
                & (box_open[f] != want)
            box_open = box_open.at[f].set(jnp.where(box_ok, want, box_open[f]))
            is_open = (furn >= 0) & box_open[f]
            n_in, h = count[f], held[a]
            pick = is_open & (v == _PICK) & (k[a] < n_in) & (h < HAND_CAPACITY)
            put = is_open & (v == _PUT) & (k[a] < h) & (n_in < c["capacity"][f])
            row = contents[f]
            obj_pick = row[jnp.minimum(k[a], width - 1)]
            after_pick = row[jnp.minimum(j + (j >= k[a]), width - 1)]
            hand = hands[a]
            obj_put = hand[jnp.minimum(k[a], hand.shape[0] - 1)]
            after_put = hand[jnp.minimum(hj + (hj >= k[a]), hand.shape[0] - 1)]
            row = jnp.where(pick, after_pick, jnp.where(put, row.at[n_in].set(obj_put), row))
            hand = jnp.where(put, after_put, jnp.where(pick, hand.at[h].set(obj_pick), hand))
            contents = contents.at[f].set(row)
            count = count.at[f].add(put.astype(count.dtype) - pick.astype(count.dtype))
            hands = hands.at[a].set(hand)
            held = held.at[a].add(pick.astype(held.dtype) - put.astype(held.dtype))
            invalid.append((v >= _OPEN) & ~(door_ok | box_ok | pick | put))
            opened.append(jnp.where(box_ok & want, furn, -1))
            picked.append(jnp.where(pick, obj_pick, -1))
            picked_from.append(jnp.where(pick, furn, -1))
            moved = moved | pick | put
        invalid = jnp.stack(invalid)
        # Phase 2: simultaneous moves (dynamics._moves).
        moving = verb == _MOVE
        door = c["door_at"][target]
        walkable = c["floor"][target] | ((door >= 0) & (
            door_open[jnp.maximum(door, 0)] if door_open.shape[0] else False))
        invalid = invalid | (moving & ~walkable)
        want = moving & walkable
        same = (target[:, None] == target[None, :]) & want[None, :]
        lower = jnp.tri(agents, agents, -1, dtype=bool)
        contested = want & (same & lower).any(axis=1)
        claim = want & ~contested
        at = target[:, None] == start[None, :]
        has_occupant = at.any(axis=1)
        occupant = at.argmax(axis=1)
        swap = target[occupant] == start

        def drop(_, alive):
            return alive & ~(has_occupant & (~alive[occupant] | swap))

        alive = jax.lax.fori_loop(0, agents, drop, claim)
        collision = contested | (claim & ~alive)
        pos = jnp.where(alive, target, start)
        new = {"tick": st["tick"] + 1, "pos": pos, "hands": hands, "held": held,
               "contents": contents, "count": count, "container_open": box_open,
               "door_open": door_open}
        new["progress"] = jnp.where(moved, self._progress(st, contents), st["progress"])
        return new, (invalid, collision, jnp.stack(opened), jnp.stack(picked),
                     jnp.stack(picked_from), moved)

    def _progress(self, st: dict, contents: jnp.ndarray) -> jnp.ndarray:
        cls = jnp.where(contents >= 0, st["object_class"][jnp.maximum(contents, 0)], -1)
        on_target = self.c["ftype"][None, :] == st["goal_target"][:, None]  # (G, F)
        match = (cls[None] == st["goal_class"][:, None, None]) & on_target[..., None]
        return jnp.minimum(match.sum(axis=(1, 2)), st["goal_count"])

    def _masks_one(self, st: dict) -> jnp.ndarray:
        c = self.c
        pos, agents = st["pos"], st["pos"].shape[0]
        kind, index, cell = c["kind"][pos], c["index"][pos], c["ncell"][pos]
        free = ~(cell[..., None] == pos[None, None, :]).any(axis=-1)
        door = kind == K_DOOR
        if st["door_open"].shape[0]:
            door_open = door & st["door_open"][jnp.minimum(index, st["door_open"].shape[0] - 1)]
        else:
            door_open = door
        furn = kind == K_FURNITURE
        f = jnp.where(furn, index, 0)
        is_box = furn & c["is_container"][f]
        is_open = furn & st["container_open"][f]
        held = st["held"][:, None]
        n_in = st["count"][f]
        put = (is_open & (n_in < c["capacity"][f]))[..., None] \
            & (jnp.arange(HAND_CAPACITY) < held[..., None])
        pick = (is_open & (held < HAND_CAPACITY))[..., None] \
            & (jnp.arange(MAX_SLOTS) < n_in[..., None])
        out = jnp.concatenate([
            jnp.ones((agents, 1), bool), ((kind == K_FLOOR) | door_open) & free,
            (door & ~door_open) | (is_box & ~is_open), (door_open & free) | (is_box & is_open),
            put.reshape(agents, -1), pick.reshape(agents, -1)], axis=1)
        return out.astype(jnp.int8).reshape(agents, NUM_ACTIONS)

    def _flat_one(self, st: dict) -> jnp.ndarray:
        c, t = self.c, self.t
        pos, agents = st["pos"], st["pos"].shape[0]
        planes = t.static_planes.shape[2]
        objects_plane = TILE_PLANES + AGENT_PLANES + t.num_furniture_types
        goal_plane = objects_plane + 1
        stand = c["stand"][pos]
        grid = c["static"][stand].astype(jnp.float32)  # binary planes: scale 1
        size = grid.shape[1]
        rows = jnp.arange(agents)
        ones = []
        if t.switch_slot.shape[1]:
            slot = c["sslot"][stand]  # (A, J)
            flags = jnp.concatenate([st["door_open"], st["container_open"][c["boxes"]]])
            plane = c["closed"] - 1 + flags
            ones.append((rows[:, None], slot, plane[None, :], slot >= 0))
        seen = self._window_slot(pos[:, None], pos[None, :])  # (A, A)
        ones.append((rows[:, None], seen, TILE_PLANES + 1, (seen >= 0) & ~jnp.eye(agents,
                                                                                dtype=bool)))
        fslot = c["fslot"][stand]  # (A, F)
        missing = (st["goal_count"] > st["progress"]) & (st["goal_class"] >= 0)
        wanted = (c["ftype"][:, None] == st["goal_target"][None, :]) & missing[None, :]
        g = jnp.arange(missing.shape[0])
        ones.append((rows[:, None, None], fslot[:, :, None], goal_plane + 1 + 2 * g,
                     (fslot >= 0)[:, :, None] & wanted[None]))
        for r, sl, pl, ok in ones:
            at = jnp.where(ok, sl * planes + pl, size)
            grid = grid.at[jnp.broadcast_to(r, at.shape), at].set(1.0, mode="drop")
        counts = jnp.zeros((agents, size), jnp.int32)
        contents = st["contents"]
        cls_in = st["object_class"][jnp.maximum(contents, 0)]  # (F, C)
        shown = (fslot >= 0)[:, :, None] & st["container_open"][None, :, None] \
            & (contents >= 0)[None]  # (A, F, C)
        hands = st["hands"][:, :HAND_CAPACITY]
        cls_held = st["object_class"][jnp.maximum(hands, 0)]  # (A holder, 2)
        held_ok = (seen >= 0)[:, :, None] & (jnp.arange(HAND_CAPACITY)[None, None, :]
                                             < st["held"][None, :, None])
        for sl, cls, ok in ((jnp.broadcast_to(fslot[:, :, None], shown.shape),
                             jnp.broadcast_to(cls_in[None], shown.shape), shown),
                            (jnp.broadcast_to(seen[:, :, None], held_ok.shape),
                             jnp.broadcast_to(cls_held[None], held_ok.shape), held_ok)):
            r = jnp.broadcast_to(rows.reshape((agents,) + (1,) * (sl.ndim - 1)), sl.shape)
            at = jnp.where(ok, sl * planes + objects_plane, size)
            counts = counts.at[r, at].add(1, mode="drop")
            for gi in range(missing.shape[0]):
                hit = ok & (cls == st["goal_class"][gi])
                at = jnp.where(hit, sl * planes + goal_plane + 2 * gi, size)
                counts = counts.at[r, at].add(1, mode="drop")
        inv = self.inverse
        grid = grid + counts.astype(jnp.uint8) * inv[:size]  # count planes start at 0
        tail = self._tail(st)
        return jnp.concatenate([grid, tail * inv[size:]], axis=1)

    def _tail(self, st: dict) -> jnp.ndarray:
        """``rl_obs.flat_tail`` of every agent: hand slots' class one-hot, goal rows."""
        k, f = self.t.num_classes, self.t.num_furniture_types
        hands = st["hands"][:, :HAND_CAPACITY]
        cls = jnp.where(hands >= 0, st["object_class"][jnp.maximum(hands, 0)], -1)
        held = (cls[..., None] == jnp.arange(k)).reshape(hands.shape[0], -1)
        goal = jnp.concatenate([
            (st["goal_class"][:, None] == jnp.arange(k)),
            (st["goal_target"][:, None] == jnp.arange(f)),
            (st["goal_count"] - st["progress"])[:, None]], axis=1).reshape(-1)
        goal = jnp.broadcast_to(goal.astype(jnp.uint8), (hands.shape[0], goal.shape[0]))
        return jnp.concatenate([held.astype(jnp.uint8), goal], axis=1)

    def _window_slot(self, viewer: jnp.ndarray, target: jnp.ndarray) -> jnp.ndarray:
        t = self.t
        r, w = t.radius, t.width
        side = 2 * r + 1
        dy = target // w - viewer // w + r
        dx = target % w - viewer % w + r
        inside = (dy >= 0) & (dy < side) & (dx >= 0) & (dx < side)
        seen = self.c["visible"][self.c["view"][viewer], target]
        return jnp.where(inside & seen, dy * side + dx, -1)


def _device(a: np.ndarray) -> jnp.ndarray:
    """``a`` on the device; int64 as int32 (every id and count here is small), so JAX's
    default 32-bit mode serves and the caller's ``jax_enable_x64`` is left alone."""
    a = np.asarray(a)
    return jnp.asarray(a.astype(np.int32) if a.dtype == np.int64 else a)


__all__ = ["JaxCore"]
