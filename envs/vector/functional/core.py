"""The batched core in JAX (``backend="jax"``, the optional ``jax`` extra): ``jit`` + ``vmap``.

One household's tick, masks and flat observations written as pure functions of
fixed-shape arrays, ``vmap``-ed over the households and ``jit``-compiled once per
batch size. The rules are those of the numpy core (:mod:`..dynamics`, :mod:`..masks`,
:mod:`..observe`, which restate the scalar ones) in the form JAX needs: no data-dependent
shapes, so every "where it applies" is a ``where`` or a scatter with ``mode="drop"``.
``tests/envs/vector/test_vector_differential.py`` runs the same comparison with the scalar
env on this backend. Episodes are drawn, and rewards computed, by the numpy side.
The pure JAX env (:mod:`.env`) calls the same per-household functions
(``_step_one``, ``_masks_one``, ``_flat_one``, ``_image_one``) inside its own step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orgteams.errors import MissingExtraError

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError('backend="jax" needs the "jax" extra: pip install '
                            '"orgteams[jax]"') from exc

from orgteams.envs.core.actions import HAND_CAPACITY, MAX_SLOTS, NUM_ACTIONS, Verb
from orgteams.envs.observe.array_obs import T_CLOSED, T_DOOR_CLOSED
from orgteams.envs.observe.rl_obs import TILE_PLANES, image_factor
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
    """``step``, ``masks`` and the ``flat`` or ``image`` observations of one layout's
    households, compiled."""

    def __init__(self, t: LayoutTables, inverse_scale: np.ndarray | None,
                 image_scale: int = 1):
        self.t = t
        self.image_scale = image_scale
        boxes = np.flatnonzero(t.is_container)
        c = {k: _device(v) for k, v in dict(
            deltas=t.deltas, floor=t.floor, door_at=t.door_at, furniture_at=t.furniture_at,
            is_container=t.is_container, capacity=t.capacity, ftype=t.furniture_type,
            kind=t.neighbour_kind, index=t.neighbour_index, ncell=t.neighbour_cell,
            stand=t.stand_index, static=t.static_planes.reshape(len(t.static_planes), -1),
            static_tail=np.pad(t.static_planes.reshape(len(t.static_planes), -1),
                               ((0, 0), (0, t.flat_tail))),
            view=t.view_of_cell,
            visible=t.visible, boxes=boxes,
            closed=np.array([T_DOOR_CLOSED] * len(t.door_cell) + [T_CLOSED] * len(boxes)),
            verb=VERB.astype(np.int64), direction=DIRECTION, slot=SLOT).items()}
        c["thing_id"], c["thing_slot"] = (_device(a) for a in _seen_things(t))
        self.c = c
        self.inverse = None if inverse_scale is None else _device(inverse_scale)
        self._step = jax.jit(jax.vmap(self._step_one))
        self._masks = jax.jit(jax.vmap(self._masks_one))
        self._flat = jax.jit(jax.vmap(self._flat_one))
        self._image = jax.jit(jax.vmap(self._image_one))
        self.factor = _device(image_factor())

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

    def image(self, s: BatchState) -> np.ndarray:
        return np.array(self._image(self._arrays(s, _DYNAMIC + _STATIC)))

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
        on_target = self.c["ftype"][:, None] == st["goal_target"][None, :]  # (F, G)
        placed = (_goal_counts(st, contents) * on_target).sum(axis=0)
        return jnp.minimum(placed, st["goal_count"])

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

    def _flat_one(self, st: dict, agent: int | None = None) -> jnp.ndarray:
        """The flat observations of a household's agents (``observe.flat_observations``):
        the planes, then hands and goal rows, each entry scaled by its bound (one
        elementwise pass over the raw values: no concatenation of float pieces).
        ``agent``: that agent's alone, ``(1, D)`` (:meth:`_planes_one`)."""
        return self._raw_flat_one(st, agent) * self.inverse

    def _raw_flat_one(self, st: dict, agent: int | None = None) -> jnp.ndarray:
        """``(A, D)`` uint8: the flat observations' raw values, before scaling."""
        return self._planes_one(st, tail=True, agent=agent)

    def _image_one(self, st: dict, agent: int | None = None) -> jnp.ndarray:
        """The image observations of a household's agents (``rl_obs.image_from_planes``):
        ``(A, planes, side * scale, side * scale)`` uint8, each plane times its factor
        (the same uint8 products as the numpy encoder); ``agent``: that one's alone."""
        side = 2 * self.t.radius + 1
        p = self._planes_one(st, agent=agent)
        p = p.reshape(p.shape[0], side, side, -1) * self.factor
        p = p.transpose(0, 3, 1, 2)
        if self.image_scale > 1:
            p = p.repeat(self.image_scale, axis=2).repeat(self.image_scale, axis=3)
        return p

    def _planes_one(self, st: dict, tail: bool = False, agent: int | None = None
                    ) -> jnp.ndarray:
        """``(A, side * side * planes)`` uint8 planes of a household's agents
        (``observe.batch_planes``); ``tail``: followed by ``rl_obs.flat_tail`` (the raw
        flat observation); ``agent``: that agent's window alone, ``(1, ...)`` (a JAX
        env's per-agent observations, each its own array: slicing one agent out of
        the ``(A, D)`` result, under ``vmap`` a strided slice of every household's
        block, cost 3-5x the encoding itself on CPU).

        Sparse: each agent's window starts as the still planes of its standing cell
        (one row of a table, gathered), and only what can change is added into it:
        one row of ``planes`` values per door and piece of furniture it sees (the
        door's or container's tile, the objects on it, the goal rows' counts and
        target marks; :meth:`_thing_rows`) and per agent it sees (the teammate mark
        and what it holds; at its own cell the hands' counts alone, the self mark
        being still). Which doors and furniture a standing cell sees, and where, is a
        table (``thing_id``, ``thing_slot``: at most ``M`` per cell, 12 on
        ``apartment`` at the default view), so a window costs one row gather and
        ``M + A`` row adds (one windowed scatter), not a pass over every plane of
        every slot: that dense build was 15-20x slower on CPU. Observations are built
        anew each step rather than kept in the state and patched: under ``vmap`` a
        patch cannot skip the households whose agents moved (their whole window
        shifts), so it would cost the full write plus the select of autoreset.
        """
        c, t = self.c, self.t
        pos, agents = st["pos"], st["pos"].shape[0]
        side2, planes = t.static_planes.shape[1], t.static_planes.shape[2]
        viewers = jnp.arange(agents) if agent is None else jnp.array([agent])
        stand = c["stand"][pos[viewers]]
        rows, mates = self._thing_rows(st)
        # Agents: their row where the viewer sees them; the viewer's own cell gets its
        # hands' counts without the teammate mark. Unseen ones add zeros at slot 0.
        own = (viewers[:, None] == jnp.arange(agents))[..., None] \
            & (jnp.arange(planes) == TILE_PLANES + 1)
        seen = self._window_slot(pos[viewers][:, None], pos[None, :])  # (V, A), -1 unseen
        mate_rows = jnp.where(own | (seen < 0)[..., None], 0, mates[None])
        update = jnp.concatenate([rows[c["thing_id"][stand]], mate_rows], axis=1)
        slots = jnp.concatenate([c["thing_slot"][stand], jnp.maximum(seen, 0)], axis=1)
        if tail:
            window = c["static_tail"][stand]  # (A, D): the tail's columns zero
            hands, goal = self._tail(st)
            tail = jnp.concatenate([hands[viewers], jnp.broadcast_to(
                goal, (len(viewers), goal.shape[0]))], axis=1)
            window = jax.lax.dynamic_update_slice(window, tail, (0, side2 * planes))
        else:
            window = c["static"][stand]
        # Row a, entries slot * planes ... + planes: one window of the scatter per update.
        index = jnp.stack([jnp.broadcast_to(jnp.arange(len(viewers))[:, None], slots.shape),
                           slots * planes], axis=-1)
        dims = jax.lax.ScatterDimensionNumbers(update_window_dims=(2,),
                                               inserted_window_dims=(0,),
                                               scatter_dims_to_operand_dims=(0, 1))
        return jax.lax.scatter_add(window, index, update, dims,
                                   mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)

    def _thing_rows(self, st: dict) -> tuple[jnp.ndarray, jnp.ndarray]:
        """The changing planes of a household's things: ``(F + D + 1, planes)`` uint8,
        a row per piece of furniture (its tile if a container, then the objects on it
        when open and per goal row the count of that row's class and its target mark),
        per door (its tile), and a zero row (the tables' padding); and ``(A, planes)``
        per agent (the teammate mark, the objects in its hands and their goal counts)."""
        c, t = self.c, self.t
        planes = t.static_planes.shape[2]
        goal_class = st["goal_class"]
        missing = (st["goal_count"] > st["progress"]) & (goal_class >= 0)

        def count_planes(ids: jnp.ndarray, target: jnp.ndarray) -> jnp.ndarray:
            """(X, S) ids of the objects in X's slots (-1: none), (X, G) target marks
            -> (X, 1 + 2G): objects, then per goal row its class count and target mark."""
            pairs = jnp.stack([_goal_counts(st, ids), target], axis=-1)
            return jnp.concatenate([(ids >= 0).sum(axis=1, keepdims=True),
                                    pairs.reshape(ids.shape[0], -1)],
                                   axis=1).astype(jnp.uint8)

        contents = jnp.where(st["container_open"][:, None], st["contents"], -1)
        target = (c["ftype"][:, None] == st["goal_target"][None, :]) & missing[None, :]
        counts = jax.lax.optimization_barrier(count_planes(contents, target))  # (F, 1 + 2G)
        doors = st["door_open"].shape[0]
        # Tiles: "closed" + open flag; tile code c is plane c - 1 (-1: no tile plane).
        code = jnp.concatenate([
            jnp.where(c["is_container"], T_CLOSED + st["container_open"], 0),
            T_DOOR_CLOSED + st["door_open"].astype(jnp.int32), jnp.zeros(1, jnp.int32)])
        tiles = (code[:, None] - 1 == jnp.arange(TILE_PLANES)).astype(jnp.uint8)
        gap = planes - TILE_PLANES - counts.shape[1]  # agent and furniture type planes
        things = jnp.concatenate([
            tiles, jnp.zeros((len(code), gap), jnp.uint8),
            jnp.concatenate([counts, jnp.zeros((doors + 1, counts.shape[1]), jnp.uint8)])],
            axis=1)
        agents = st["pos"].shape[0]
        hands = st["hands"][:, :HAND_CAPACITY]
        ids_h = jnp.where(jnp.arange(HAND_CAPACITY)[None, :] < st["held"][:, None], hands, -1)
        mark = jnp.arange(TILE_PLANES + gap) == TILE_PLANES + 1  # the teammate plane
        mates = jnp.concatenate([
            jnp.broadcast_to(mark.astype(jnp.uint8), (agents, len(mark))),
            count_planes(ids_h, jnp.zeros((agents, goal_class.shape[0]), bool))], axis=1)
        return things, mates

    def _tail(self, st: dict) -> tuple[jnp.ndarray, jnp.ndarray]:
        """``rl_obs.flat_tail`` in two parts: ``(A, HAND_CAPACITY * K)`` uint8, each
        agent's hand slots' class one-hot, and the household's goal rows, ``(G * (K + F
        + 1),)`` uint8 (per row: class one-hot, target one-hot, units still missing),
        made as one select over the row's columns rather than a concatenation (which
        XLA's CPU loops pay for at every entry)."""
        k, f = self.t.num_classes, self.t.num_furniture_types
        hands = st["hands"][:, :HAND_CAPACITY]
        cls = jnp.where(hands >= 0, st["object_class"][jnp.maximum(hands, 0)], -1)
        held = (cls[..., None] == jnp.arange(k)).reshape(hands.shape[0], -1)
        col = jnp.arange(k + f + 1)
        goal = jnp.where(col < k, st["goal_class"][:, None] == col,
                         jnp.where(col < k + f, st["goal_target"][:, None] == col - k,
                                   (st["goal_count"] - st["progress"])[:, None]))
        # Made once per household: without the barrier XLA fuses these one-hots into
        # every agent's window write and remakes them there, entry by entry (its
        # largest kernel at view_radius=2, about a seventh of the step).
        return jax.lax.optimization_barrier((held.astype(jnp.uint8),
                                             goal.astype(jnp.uint8).reshape(-1)))

    def _window_slot(self, viewer: jnp.ndarray, target: jnp.ndarray) -> jnp.ndarray:
        t = self.t
        r, w = t.radius, t.width
        side = 2 * r + 1
        dy = target // w - viewer // w + r
        dx = target % w - viewer % w + r
        inside = (dy >= 0) & (dy < side) & (dx >= 0) & (dx < side)
        seen = self.c["visible"][self.c["view"][viewer], target]
        return jnp.where(inside & seen, dy * side + dx, -1)


def _goal_counts(st: dict, ids: jnp.ndarray) -> jnp.ndarray:
    """``(X, G)``: per row of ``ids`` (``(X, S)`` object ids, -1 none), how many of its
    objects are of each goal row's class (0 for unused rows, class -1).

    Counted as ``(X, O)`` objects held times ``(O, G)`` objects wanted, compares and
    sums, with no gather of each slot's class: under ``vmap`` XLA's CPU backend runs
    such a gather index by index (180 per household on ``apartment``)."""
    goal_class = st["goal_class"]
    objects = jnp.arange(st["object_class"].shape[0])
    held = (ids[..., None] == objects).sum(axis=-2, dtype=jnp.int32)  # (X, O)
    wanted = (st["object_class"][:, None] == goal_class[None, :]) & (goal_class >= 0)
    return (held[:, :, None] * wanted[None]).sum(axis=1, dtype=jnp.int32)


def _seen_things(t: LayoutTables) -> tuple[np.ndarray, np.ndarray]:
    """Per standing cell (rows of ``static_planes``), the doors and furniture seen from
    it: ``(cells, M)`` thing ids (furniture ``0..F-1``, doors ``F..F+D-1``; ``F + D``, a
    zero row, pads) and their window slots (0 for the pads: adding zeros there is a
    no-op); ``M`` the most any cell sees."""
    stand = np.flatnonzero(t.view_of_cell >= 0)
    things = np.concatenate([t.furniture_cell, t.door_cell])
    slot = t.window_slot(stand[:, None], things[None, :])  # (cells, F + D), -1 unseen
    seen = slot >= 0
    width = max(1, int(seen.sum(axis=1).max(initial=0)))
    ids = np.full((len(stand), width), len(things), np.int32)
    slots = np.zeros((len(stand), width), np.int32)
    for row, mask in enumerate(seen):
        which = np.flatnonzero(mask)
        ids[row, :len(which)], slots[row, :len(which)] = which, slot[row, which]
    return ids, slots


def _device(a: np.ndarray) -> jnp.ndarray:
    """``a`` on the device; int64 as int32 (every id and count here is small), so JAX's
    default 32-bit mode serves and the caller's ``jax_enable_x64`` is left alone."""
    a = np.asarray(a)
    return jnp.asarray(a.astype(np.int32) if a.dtype == np.int64 else a)


__all__ = ["JaxCore"]
