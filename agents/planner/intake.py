"""What a team's planners take in alike from one list of messages, derived once for all.

Under ``shared`` each of 256 planners is handed the same list of fresh messages a round
(:func:`~orgteams.agents.messages.unseen` hands readers who ask alike one
:class:`~orgteams.agents.messages.Handed` list, which none may change): the
team's changed status reports and room claims, each stored by every reader into its
own table (``intents``, ``room_claims``), one message at a time (under ``leader``,
the members' room claims, handed alike to those that read since the same place). What
those stores leave in a table depends only on the list, not on the reader (every one
addressed to everyone; a reader's own leave its entries as they were), so it is derived
once (:class:`Intake`) and each reader applies it in a few dict operations. So are its
``found`` reports (under ``sequential`` most of what a planner hears, each heard by 255:
the runs of readers between two speakers are handed one list): how many each teammate
reported, and where each report says its object is (the notes a reader's memory takes
at its next turn), when nothing else of the list notes anything in between. The other
messages (claims on objects, other reports, orders) it still reads one by one, as they
depend on what it holds.

A reader takes in only what it was handed: the intake of a list is read by a planner
only when that very list (the same object) was handed to it, or that list less its own
messages (a :class:`~orgteams.agents.messages.Handed` list that knows it); its own it
skips, so they leave its entries as they were (:func:`take_in`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from orgteams.agents.messages import EVERYONE, Handed, TeamMessage

__all__ = ["Intake", "intake_of", "shared_intake", "take_in"]


class Intake(NamedTuple):
    """A list's status reports and room claims as their stores leave a reader's tables.

    Readers share it: none may change it."""

    senders: frozenset[str]  # who said any of the list
    grabs: dict[str, str]  # sender -> the object its status says it grabs, in order
    idle: frozenset[str]  # senders whose status says they grab nothing
    rooms: dict[str, str]  # whom a room claim speaks for -> the room its latest says
    rest: list[TeamMessage]  # every other message, in order
    selfish: bool  # every room claim speaks for its sender: a sender's own touch only
    # its own entries (a status always does)
    # whom found reports speak for -> how many, in the order first said; None when they
    # are read one by one (one not addressed to everyone, or an order or done report
    # among the rest, whose notes fall between theirs)
    found: dict[str, int] | None
    finders: frozenset[str]  # who said a found report
    notes: list[tuple]  # the found reports' notes (TeamMessage.noted), in order
    others: list[TeamMessage]  # rest less its found reports


def intake_of(messages: Sequence[TeamMessage]) -> Intake | None:
    """The :class:`Intake` of ``messages``, or None when what their status reports and
    room claims leave depends on more than their order: one not addressed to everyone
    (some readers skip it), a sender reporting twice (a status dropped, then made again,
    moves in the table), or a room released (it undoes a claim only if it is the one
    held)."""
    senders: set[str] = set()
    grabs: dict[str, str] = {}
    idle: list[str] = []
    rooms: dict[str, str] = {}
    rest: list[TeamMessage] = []
    reported: set[str] = set()
    selfish = True
    found: dict[str, int] | None = {}
    finders: set[str] = set()
    notes: list[tuple] = []
    others: list[TeamMessage] = []
    for m in messages:
        sender, kind = m.sender, m.kind
        senders.add(sender)
        if kind == "status":
            if m.receivers != EVERYONE or sender in reported:
                return None
            reported.add(sender)
            target = m.grabs
            if target is not None:
                grabs[sender] = target
            else:
                idle.append(sender)
        elif kind == "claim" and m.claimed is not None and m.claimed[0]:
            if m.receivers != EVERYONE:
                return None
            _, by, room = m.claimed
            rooms[by] = room  # a dict's stores: the first one's place, the latest room
            selfish = selfish and by == sender
        elif kind == "release" and "room" in m.content:
            return None
        else:
            rest.append(m)
            if kind != "found":
                others.append(m)
                if kind == "assign" or kind == "done":  # notes among the found ones'
                    found = None
            elif found is not None:
                if m.receivers != EVERYONE:
                    found = None
                    continue
                by = m.speaks_for
                found[by] = found.get(by, 0) + 1
                finders.add(sender)
                note = m.noted
                if note is not None:
                    notes.append(note)
    return Intake(frozenset(senders), grabs, frozenset(idle), rooms, rest, selfish, found,
                  frozenset(finders), notes, others)


_latest: tuple = (None, None)
"""(the latest shared :class:`Handed` list a planner was handed, whole or less its own,
its :class:`Intake` once a second planner was handed it, False when it has none): one
read, replaced whole (episodes in other threads replace it)."""


def shared_intake(messages: list[TeamMessage]) -> Intake | None:
    """The :class:`Intake` of the shared list ``messages`` are (a :class:`Handed` list,
    or its ``whole``) when a planner before this one was handed it too: derived at the
    second reader, so a list only one reader is handed costs nothing more. None: read
    them message by message."""
    global _latest
    if type(messages) is not Handed:
        return None
    if messages.whole is not None:
        messages = messages.whole
    known = _latest  # one read
    if known[0] is not messages:
        _latest = (messages, None)
        return None
    made = known[1]
    if made is None:
        made = intake_of(messages) or False
        _latest = (messages, made)
    return made or None


_NONE = object()  # no entry


def take_in(messages: list[TeamMessage], me: str, intents: dict[str, str],
            room_claims: dict[str, str], found_by: Counter | None = None,
            heard: list[tuple] | None = None) -> list[TeamMessage] | None:
    """Take the statuses and room claims of ``messages`` handed to planner ``me`` into
    its ``intents`` and ``room_claims`` from the intake its shared list has
    (:func:`shared_intake`), leaving its tables as reading them one by one would; the
    rest of the shared list is returned, to be read one by one (its own among them,
    which a planner skips). None: nothing was taken in, read ``messages`` one by one.

    With ``found_by`` and ``heard`` (a planner that relays no reports), its found
    reports too, when the intake has them and none is its own: counted into
    ``found_by`` and their notes put at the end of ``heard``, as reading them one by
    one would; the rest is returned less them."""
    made = shared_intake(messages)
    if made is None:
        return None
    left = messages.without  # a Handed list: whose messages it lacks, if any
    if left is not None and left != me:
        return None
    own = me in made.senders
    if own and (left is None or not made.selfish):
        return None  # its own in the list it was handed, or keyed to others' entries
    # the idle senders' entries go (its own status leaves its entry as it was): those
    # among its entries, found in one set operation, not a pop for each (most of a
    # 256-agent team grab nothing: ~200 a reader a round); which goes first changes
    # nothing of the order the others keep
    idle = made.idle
    if idle and intents:
        for agent in intents.keys() & idle:
            if agent != me:
                del intents[agent]
    if own:  # its own statuses and room claims touch only its entries: kept as they were
        kept = intents.get(me, _NONE), room_claims.get(me, _NONE)
    intents.update(made.grabs)
    room_claims.update(made.rooms)
    if own:
        for table, entry in zip((intents, room_claims), kept):
            if entry is _NONE:
                table.pop(me, None)  # put in last: taking it out leaves the order as it was
            else:
                table[me] = entry  # its place unchanged
    found = made.found
    if found_by is None or found is None or me in made.finders:
        return made.rest
    for by, count in found.items():  # first said, first counted: the order they had
        found_by[by] += count
    heard += made.notes
    return made.others
