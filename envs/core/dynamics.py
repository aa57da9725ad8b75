"""Pure dynamics: ``transition(state, joint_action) -> (state, events)``.

One tick runs in explicit phases, as in Overcooked-AI:

1. interact: open / close / pick / put, in agent-index order (so when two agents
   reach for the same object, the lower index gets it and the other's action is an
   ``invalid_action`` event);
2. move: all moves resolve simultaneously; an agent moves only into a free,
   walkable cell that no lower-index agent also claims; swaps are refused; a
   blocked move is a ``collision`` (with an agent) or ``invalid_action`` (wall);
3. effects: goal progress, ``subgoal_done`` / ``subgoal_undone`` events.

Nothing here draws random numbers: the same state and actions give the same result.

These rules are restated over arrays by the batched core
(:mod:`orgteams.envs.vector.dynamics`, and ``vector.functional.core``); change one here and
``tests/envs/vector/test_vector_differential.py`` fails until the batched core follows.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields

from orgteams.envs.core.actions import ACTIONS, HAND_CAPACITY, NUM_ACTIONS, Verb
from orgteams.envs.core.state import HouseholdState, goal_progress, is_walkable

EVENT_TYPES = ("picked", "placed", "opened", "closed", "subgoal_done", "subgoal_undone",
               "collision", "invalid_action")


@dataclass(frozen=True)
class Event:
    """Something that happened in a tick. ``agent`` is an index (-1 for the team)."""

    type: str
    agent: int
    obj: int = -1
    furniture: int = -1
    door: int = -1
    other: int = -1  # the other agent of a collision; the predicate of a subgoal event
    reason: str = ""

    def to_dict(self) -> dict:
        """The fields that are set (not -1 or ""), in field order; a new dict each call."""
        return dict(self._set_fields)

    @functools.cached_property
    def _set_fields(self) -> dict:
        # Speed: computed once per event (events are immutable and _event reuses them),
        # stored in the instance __dict__ beside the fields (not one of them).
        return {k: v for k in _FIELD_NAMES if (v := getattr(self, k)) not in (-1, "")}


_FIELD_NAMES = tuple(f.name for f in fields(Event))
# Speed: plain module globals; looking members up on the enum class costs ~0.15 us each
# in Python 3.11, several times per agent per tick.
_MOVE, _OPEN, _CLOSE, _PICK = Verb.MOVE, Verb.OPEN, Verb.CLOSE, Verb.PICK
_NOTHING_THERE = {Verb.OPEN: "nothing to open or close there",
                  Verb.CLOSE: "nothing to open or close there",
                  Verb.PUT: "no furniture there", Verb.PICK: "no furniture there"}
# Speed: events are immutable values, and the same ones recur tick after tick (an agent
# bumping into a wall), so they are built once and shared. Calls pass the fields by
# position (type, agent, obj, furniture, door, other, reason): keyword arguments would
# double the cost of the cache lookup.
_event = functools.lru_cache(maxsize=8192)(Event)


def transition(state: HouseholdState, joint_action: Sequence[int]
               ) -> tuple[HouseholdState, list[Event]]:
    """Advance one tick. ``joint_action[i]`` is agent i's action id."""
    scene = state.scene
    n = len(state.agent_pos)
    if len(joint_action) != n:
        raise ValueError(f"joint action has {len(joint_action)} entries for {n} agents")
    hands = list(state.hands)
    contents = list(state.contents)
    cont_open = list(state.container_open)
    door_open = list(state.door_open)
    objects_moved = False  # something was picked or put: goal progress may change
    events: list[Event] = []
    moving: dict[int, int] = {}
    pos = state.agent_pos
    deltas, furniture_at, door_at = scene.deltas, scene.furniture_at, scene.door_at

    for a, act_id in enumerate(joint_action):
        if act_id == 0:
            continue
        if not 0 <= act_id < NUM_ACTIONS:
            raise ValueError(f"agent {a}: action {act_id!r} is outside the action space "
                             f"Discrete({NUM_ACTIONS})")
        verb, d, idx = ACTIONS[act_id]
        target = pos[a] + deltas[d]
        if verb == _MOVE:
            moving[a] = target
            continue
        furn = furniture_at.get(target, -1)
        door = door_at.get(target, -1)
        if furn < 0 and door < 0:  # nothing there at all: the usual random interaction
            events.append(_event("invalid_action", a, -1, -1, -1, -1, _NOTHING_THERE[verb]))
            continue

        if verb == _OPEN or verb == _CLOSE:
            want = verb == _OPEN
            if door >= 0:
                if door_open[door] == want:
                    _invalid(events, a, furn, door,
                             f"door already {'open' if want else 'closed'}")
                elif not want and target in pos:
                    _invalid(events, a, furn, door, "someone is standing in the doorway")
                else:
                    door_open[door] = want
                    events.append(_event("opened" if want else "closed", a, -1, -1, door))
            elif furn >= 0 and scene.is_container[furn]:
                if cont_open[furn] == want:
                    _invalid(events, a, furn, door,
                             f"container already {'open' if want else 'closed'}")
                else:
                    cont_open[furn] = want
                    events.append(_event("opened" if want else "closed", a, -1, furn))
            else:
                _invalid(events, a, furn, door, "nothing to open or close there")
        elif furn < 0:
            _invalid(events, a, furn, door, "no furniture there")
        elif not cont_open[furn]:
            _invalid(events, a, furn, door, "the container is closed")
        elif verb == _PICK:
            if idx >= len(contents[furn]):
                _invalid(events, a, furn, door, f"no object in slot {idx}")
            elif len(hands[a]) >= HAND_CAPACITY:
                _invalid(events, a, furn, door, "both hands are full")
            else:
                objects_moved = True
                obj = contents[furn][idx]
                contents[furn] = contents[furn][:idx] + contents[furn][idx + 1:]
                hands[a] = hands[a] + (obj,)
                events.append(_event("picked", a, obj, furn))
        else:  # PUT
            if idx >= len(hands[a]):
                _invalid(events, a, furn, door, f"hand slot {idx} is empty")
            elif len(contents[furn]) >= scene.capacity[furn]:
                _invalid(events, a, furn, door, "no room left there")
            else:
                objects_moved = True
                obj = hands[a][idx]
                hands[a] = hands[a][:idx] + hands[a][idx + 1:]
                contents[furn] = contents[furn] + (obj,)
                events.append(_event("placed", a, obj, furn))

    new = HouseholdState(scene, state.tick + 1, list(pos), hands, contents, cont_open, door_open,
                         progress=state.progress)
    if moving:
        new.agent_pos = _resolve_moves(new, moving, events)
    if objects_moved:
        new.progress = goal_progress(new)
        for i, (before, after) in enumerate(zip(state.progress, new.progress)):
            if after != before:
                kind = "subgoal_done" if after > before else "subgoal_undone"
                events.append(_event(kind, -1, -1, -1, -1, i, str(scene.goal[i])))
    return new, events


def _invalid(events: list[Event], a: int, furn: int, door: int, reason: str) -> None:
    """Record agent ``a``'s impossible interaction (a module function: no closure per agent)."""
    events.append(_event("invalid_action", a, -1, furn, door, -1, reason))


def _resolve_moves(state: HouseholdState, moving: dict[int, int], events: list[Event]
                   ) -> list[int]:
    """Simultaneous moves without two agents in a cell, swaps or wall-walking."""
    pos = list(state.agent_pos)
    if len(moving) == 1:  # the common case, resolved the same way without the machinery
        ((a, target),) = moving.items()
        if not is_walkable(state, target):
            events.append(_event("invalid_action", a, -1, -1, -1, -1, "cannot walk there"))
        elif target in pos:  # the occupant stays where it is
            events.append(_event("collision", a, -1, -1, -1, pos.index(target),
                                 "cell occupied"))
        else:
            pos[a] = target
        return pos
    occupant = {c: a for a, c in enumerate(pos)}
    want: dict[int, int] = {}
    for a, target in moving.items():
        if is_walkable(state, target):
            want[a] = target
        else:
            events.append(_event("invalid_action", a, -1, -1, -1, -1, "cannot walk there"))
    # Same-target conflicts: the lowest agent index keeps its claim.
    claimed: dict[int, int] = {}
    for a in sorted(want):
        t = want[a]
        if t in claimed:
            events.append(_event("collision", a, -1, -1, -1, claimed[t], "same target cell"))
        else:
            claimed[t] = a
    want = {a: t for t, a in claimed.items()}
    # Drop moves into cells whose occupant stays (or swaps), until nothing changes.
    changed = True
    while changed:
        changed = False
        for a, t in list(want.items()):
            b = occupant.get(t)
            if b is None or b == a:
                continue
            if b not in want or want[b] == pos[a]:
                del want[a]
                events.append(_event("collision", a, -1, -1, -1, b, "cell occupied"))
                changed = True
    for a, t in want.items():
        pos[a] = t
    return pos
