"""Primitive actions: one ``Discrete`` space that an RL policy can index directly.

Interactions address the cell next to the agent in one of four directions, so no
facing direction is needed. Objects on a piece of furniture are addressed by their
slot (placement order, as listed in observations); held objects by hand slot.

=============  ===================  =========================================
ids            action               meaning
=============  ===================  =========================================
0              wait                 do nothing
1-4            move(d)              step north/east/south/west
5-8            open(d)              open the door or container in direction d
9-12           close(d)             close the door or container in direction d
13-20          put(d, h)            put the object in hand slot h on/in furniture d
21-52          pick(d, k)           pick the k-th object (k < 8) on/in furniture d
=============  ===================  =========================================
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from orgteams.envs.core.layout import DIRECTION_NAMES

HAND_CAPACITY = 2
MAX_SLOTS = 8  # objects addressable on one piece of furniture (catalog capacities <= 8)


class Verb(IntEnum):
    """What a primitive action does; with a direction (and a slot) it makes an :class:`Action`."""
    WAIT = 0
    MOVE = 1
    OPEN = 2
    CLOSE = 3
    PUT = 4
    PICK = 5


class Action(NamedTuple):
    verb: Verb
    direction: int = 0
    index: int = 0  # hand slot for PUT, furniture slot for PICK

    def __str__(self) -> str:
        return self.words("put(hand {n} -> {d})", "pick({d}, slot {n})", "{verb}({d})")

    def words(self, put: str, pick: str, other: str, first: int = 0) -> str:
        """This action as text: ``"wait"``, or its verb's template (``put``, ``pick``, else
        ``other``) filled with ``{verb}``, ``{d}`` (the direction's name) and ``{n}`` (the
        hand or furniture slot, counted from ``first``)."""
        if self.verb == Verb.WAIT:
            return "wait"
        template = {Verb.PUT: put, Verb.PICK: pick}.get(self.verb, other)
        return template.format(verb=self.verb.name.lower(), d=DIRECTION_NAMES[self.direction],
                               n=self.index + first)


_BASES = {Verb.MOVE: 1, Verb.OPEN: 5, Verb.CLOSE: 9, Verb.PUT: 13, Verb.PICK: 21}
_WIDTH = {Verb.PUT: HAND_CAPACITY, Verb.PICK: MAX_SLOTS}
NUM_ACTIONS = 21 + 4 * MAX_SLOTS


def encode(verb: Verb, direction: int = 0, index: int = 0) -> int:
    """Action id of a verb, direction (0..3 = N, E, S, W) and slot index."""
    if verb == Verb.WAIT:
        return 0
    if not 0 <= direction < 4:
        raise ValueError(f"direction must be 0..3 (north, east, south, west), got {direction}")
    width = _WIDTH.get(verb, 1)
    if not 0 <= index < width:
        raise ValueError(f"{verb.name.lower()} index must be 0..{width - 1}, got {index}")
    return _BASES[verb] + direction * width + index


def _build_table() -> tuple[Action, ...]:
    table = [Action(Verb.WAIT)]
    for verb in (Verb.MOVE, Verb.OPEN, Verb.CLOSE, Verb.PUT, Verb.PICK):
        for d in range(4):
            for i in range(_WIDTH.get(verb, 1)):
                table.append(Action(verb, d, i))
    return tuple(table)


ACTIONS: tuple[Action, ...] = _build_table()  # ACTIONS[id] decodes an id


def decode(action_id: int) -> Action:
    """The :class:`Action` of an id; raises ``ValueError`` outside ``0..NUM_ACTIONS-1``."""
    try:
        if action_id < 0:
            raise IndexError
        return ACTIONS[action_id]
    except (IndexError, TypeError):
        raise ValueError(
            f"action {action_id!r} is outside the action space Discrete({NUM_ACTIONS}); "
            "see orgteams.envs.core.actions for the table"
        ) from None
