"""The one team message: what a member says, from its decision to the overlay and the log.

A :class:`TeamMessage` is created by the member that speaks (an LLM's reply, a
person's line, a planner's structured claim), stamped by the round loop with its
round, stage and the receivers the organization's channels let it reach
(``delivered``), shown to later speakers of the round, delivered to receivers'
memories, drawn by the window overlay (:class:`~orgteams.envs.render.overlay.Overlay`,
which knows it only as a :class:`~orgteams.envs.render.overlay.Speech`) and written to
the episode log.

Structured kinds (spoken by planner agents; ``text`` is their rendering, which is
what token counts measure):

=========  ================================================  ==================================
kind       content                                           text
=========  ================================================  ==================================
claim      ``{"object": "cupcake_2", "target": "coffee_table"}``  "claim cupcake_2 -> coffee_table"
           or ``{"room": "kitchen"}`` (exploring it)         "claim explore kitchen"
release    ``{"object": "cupcake_2"}`` or ``{"room": ...}``   "release cupcake_2"
found      ``{"object": "apple_1", "location": "fridge"}``    "seen apple_1 in fridge"
assign     ``{"agent": "agent_1", "action": "grab:cupcake_2", "agent_1: grab cupcake_2 ->
           "target": "coffee_table"}`` (target optional)    coffee_table"
done       ``{"object": "cupcake_2", "target": "coffee_table"}``  "done cupcake_2 -> coffee_table"
           or ``{"room": "kitchen"}`` (explored it; to a leader  "done explore kitchen"
           that assigns work)
status     ``{"doing": "grab:cupcake_2", "holding": [..]}``   "doing grab cupcake_2, holding
           (a report every round, organization rules)        apple_1"
correct    ``{"agent": "agent_1", "action": "grab:x",        "correct agent_1: grab x (x is
           "reason": "done"}`` (a member corrects a leader)  done)"
text       ``{}``                                            what was said
=========  ================================================  ==================================
"""

from __future__ import annotations

import itertools
import threading
import weakref
from _weakref import _remove_dead_weakref
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse
from typing import Any, Literal

from orgteams.envs.core.limits import MESSAGE_MAX_CHARS

__all__ = ["EVERYONE", "MESSAGE_KINDS", "MESSAGE_MAX_CHARS", "Broadcast", "Everyone", "Handed",
           "Heard", "Receivers", "Seen", "TeamMessage", "of_kind", "render", "unseen"]

EVERYONE = "everyone"  # the one spelling of "every other team member"
Everyone = Literal["everyone"]
Receivers = tuple[str, ...] | Everyone
MESSAGE_KINDS = ("claim", "release", "found", "assign", "done", "status", "correct", "text",
                 "action")
# "action": not a message but an agent's chosen action shown to later agents of a
# sequential round (orgteams.agents.shared_context); never delivered, no tokens.


class _kept:
    """A value of a (frozen) message computed on first read and kept in its
    ``__dict__``: :func:`functools.cached_property` without its lock (Python 3.11 takes
    one lock for every message's first read; a 256-agent team's readers first read
    hundreds of new messages a round). Two threads reading one message at once
    compute equal values; either is kept."""

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        self.compute, self.name, self.__doc__ = compute, compute.__name__, compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, message: Any, owner: type | None = None) -> Any:
        if message is None:
            return self
        value = message.__dict__[self.name] = self.compute(message)
        return value


# the order said_ids are made in: one made after a reader's set last grew is not in it
# (Seen.grown; read and advanced atomically, whichever thread asks)
_BORN = itertools.count()


class _Said:
    """One value of :attr:`TeamMessage.said` (:attr:`TeamMessage.said_id`), and when
    it was made (``born``, from :data:`_BORN`)."""

    __slots__ = ("__weakref__", "born", "key")

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.born = next(_BORN)


# said -> a weak reference to its object while anything (a message, a reader's memory)
# keeps it; an equal value said later gets that same object, or a new one when none is
# kept any more. A plain dict of weak references, each removing its own entry once dead
# (if the entry is still that dead one: _remove_dead_weakref checks, atomically), not a
# WeakValueDictionary: its get and set are Python code, and a 256-agent team makes
# hundreds of new said_ids a round, each asked for by every reader.
_SAID_IDS: dict[tuple, weakref.ref] = {}
_SAID_LOCK = threading.Lock()


def _said_gone(key: tuple) -> Callable[[weakref.ref], None]:
    """The callback of ``key``'s weak reference: its entry goes when its object does."""
    return lambda _: _remove_dead_weakref(_SAID_IDS, key)


def render(kind: str, content: Mapping[str, Any], text: str = "",
           names: Mapping[str, str] | None = None) -> str:
    """The short English sentence of a structured message (``text`` for kind ``text``).

    ``names``: agent id -> display name, to name an assignee as the team does
    (``Bob: grab cupcake_2``); ids are kept without it.
    """
    c = content
    if kind == "text":
        return text
    if kind == "found":
        return f"seen {c['object']} in {c['location']}"
    if kind == "status":
        held = ", ".join(c.get("holding") or ()) or "nothing"
        return f"doing {str(c.get('doing', 'wait')).replace(':', ' ', 1)}, holding {held}"
    if kind == "correct":
        what = c["action"].replace(":", " ", 1)
        return (f"correct {(names or {}).get(c['agent'], c['agent'])}: {what} "
                f"({c.get('reason', 'not needed')})")
    if kind == "assign":
        what = c["action"].replace(":", " ", 1)
        tail = f" -> {c['target']}" if c.get("target") else ""
        return f"{(names or {}).get(c['agent'], c['agent'])}: {what}{tail}"
    thing = c.get("object") or f"explore {c.get('room', '')}"
    tail = f" -> {c['target']}" if c.get("target") else ""
    return f"{kind} {thing}{tail}"


@dataclass(frozen=True)
class TeamMessage:
    """One message of a team member (or one silent turn: empty ``text``).

    Attributes:
        sender: Agent id of the speaker.
        receivers: Whom it addressed: agent ids, or ``"everyone"``.
        text: What was said (for structured kinds, their rendering).
        kind: One of :data:`MESSAGE_KINDS`.
        round: The decision round it was said in.
        stage: Index of the communicate stage it was said in.
        content: Structured payload of non-text kinds (do not mutate).
        delivered: Agent ids it reached along allowed channels; None until routed, and
            for silent turns, which every later speaker may see.
        role: The role the speaker chose or claimed when it spoke, if any.
        abstained: The speaker abstained from the round instead of speaking.
    """

    sender: str
    receivers: Receivers
    text: str = ""
    kind: str = "text"
    round: int = 0
    stage: int = 0
    content: Mapping[str, Any] = field(default_factory=dict, hash=False)
    delivered: tuple[str, ...] | None = None
    role: str | None = None
    abstained: bool = False

    def __post_init__(self) -> None:
        if self.kind not in MESSAGE_KINDS:
            raise ValueError(f"message kind {self.kind!r} must be one of "
                             f"{', '.join(MESSAGE_KINDS)}")
        if isinstance(self.receivers, str):
            if self.receivers != EVERYONE:
                raise ValueError(f"receivers must be a tuple of agent names or {EVERYONE!r}, "
                                 f"got {self.receivers!r}")
        elif not isinstance(self.receivers, tuple):
            object.__setattr__(self, "receivers", tuple(self.receivers))

    @staticmethod
    def unchecked(sender: str, receivers: Receivers, text: str, kind: str, round: int,
                  stage: int, content: Mapping[str, Any], delivered: tuple[str, ...] | None,
                  role: str | None, abstained: bool) -> TeamMessage:
        """The message ``TeamMessage(sender, receivers, ..., abstained)`` makes, of fields
        the caller knows are valid (``kind`` one of :data:`MESSAGE_KINDS`, ``receivers``
        a tuple or :data:`EVERYONE`), without :meth:`__post_init__`'s checks and the
        frozen fields' one ``object.__setattr__`` each: 1.3 us -> 0.3 us, and the round
        loop makes one to three a speaker (256 a stage at 256 agents). Equal, same hash,
        same fields in the same order (tests/agents/test_messages.py). Stored key by key:
        ``__dict__.update(sender=...)`` built a keyword dict first (a third more)."""
        out = object.__new__(TeamMessage)
        values = out.__dict__
        values["sender"] = sender
        values["receivers"] = receivers
        values["text"] = text
        values["kind"] = kind
        values["round"] = round
        values["stage"] = stage
        values["content"] = content
        values["delivered"] = delivered
        values["role"] = role
        values["abstained"] = abstained
        return out

    def stamped(self, sender: str, round: int, stage: int, delivered: tuple[str, ...],
                role: str | None, abstained: bool) -> TeamMessage:
        """This message as the round loop stamps it: said by ``sender`` in ``round`` and
        ``stage``, reaching ``delivered``, with the speaker's ``role`` and ``abstained``;
        its receivers, text, kind and content kept (shared, not copied): what
        :func:`dataclasses.replace` made, made :meth:`unchecked` (this message passed
        the checks). Only for this class: a subclass's fields would be lost."""
        if type(self) is not TeamMessage:
            raise TypeError(f"stamped() copies a TeamMessage, not a {type(self).__name__}")
        return TeamMessage.unchecked(sender, self.receivers, self.text, self.kind, round,
                                     stage, self.content, delivered, role, abstained)

    @staticmethod
    def silent_turn(sender: str, round: int, stage: int, role: str | None,
                    abstained: bool) -> TeamMessage:
        """A silent turn of ``sender`` as the round loop records it (no receivers, no
        text): ``TeamMessage(sender, (), round=round, stage=stage, role=role,
        abstained=abstained)``, made :meth:`unchecked` (most of a 256-agent team's turns,
        most rounds, are silent)."""
        return TeamMessage.unchecked(sender, (), "", "text", round, stage, {}, None, role,
                                     abstained)

    @classmethod
    def structured(cls, sender: str, receivers: Receivers, kind: str,
                   content: Mapping[str, Any]) -> TeamMessage:
        """A structured message whose ``text`` is its rendering (:func:`render`)."""
        if kind not in MESSAGE_KINDS:
            raise ValueError(f"message kind {kind!r} must be one of {', '.join(MESSAGE_KINDS)}")
        text = render(kind, content)
        if cls is not TeamMessage:
            return cls(sender, receivers, text, kind, content=dict(content))
        # __post_init__'s checks here, then made unchecked: planners say hundreds of
        # these a round at 256 agents (claims of every chosen action, under sequential)
        if isinstance(receivers, str):
            if receivers != EVERYONE:
                raise ValueError(f"receivers must be a tuple of agent names or {EVERYONE!r}, "
                                 f"got {receivers!r}")
        elif not isinstance(receivers, tuple):
            receivers = tuple(receivers)
        return TeamMessage.unchecked(sender, receivers, text, kind, 0, 0, dict(content), None,
                                     None, False)

    @_kept
    def said(self) -> tuple:
        """What was said, whoever it reached and whenever: sender, kind and content (its
        items sorted); the same for a repeat. Computed once per message, which a
        256-agent team hands to hundreds of readers."""
        return (self.sender, self.kind, tuple(sorted(self.content.items())))

    @_kept
    def said_id(self) -> object:
        """:attr:`said` as one object for all equal ones while any of them is kept: it
        hashes and compares by identity, so a reader's set of what it heard finds a
        repeat without hashing the content again (each of 256 planners reads 256 status
        reports a round). Content that cannot be hashed gives :attr:`said` itself."""
        key = self.said
        with _SAID_LOCK:  # one object per value, whichever thread asks first
            try:
                ref = _SAID_IDS.get(key)
            except TypeError:  # content that cannot be hashed
                return key
            ident = ref() if ref is not None else None
            if ident is None:  # never said, or no longer kept
                ident = _Said(key)
                _SAID_IDS[key] = weakref.ref(ident, _said_gone(key))
        return ident

    @_kept
    def speaks_for(self) -> str:
        """Whom it speaks for: the teammate a leader's claim is ``for`` (the report it
        ordered), the reporter of a report relayed ``by`` a leader, else its sender.
        Read once per message: each of 256 planners reads every claim."""
        c = self.content
        return str(c.get("for") or c.get("by") or self.sender)

    @_kept
    def doing(self) -> tuple[str, str]:
        """The action a ``status`` says its sender does, as ``(kind, target)``
        (``("grab", "cupcake_2")``; ``("", "")`` when it says none). Read once per
        message: each of 256 planners reads 255 status reports a round."""
        kind, _, target = str(self.content.get("doing", "")).partition(":")
        return kind, target

    @_kept
    def grabs(self) -> str | None:
        """The object a ``status`` says its sender grabs (:attr:`doing` of kind
        ``grab``), else None. Read once per message: each of 256 planners takes in
        the team's changed status reports every round."""
        kind, target = self.doing
        return target if kind == "grab" else None

    @_kept
    def claimed(self) -> tuple[bool, str, Any] | None:
        """What a ``claim`` claims, as a planner records it: ``(False, object, (whom
        it speaks for, tick))`` (``tick`` 0 when not said), ``(True, whom it speaks
        for, room)``, or None when it names neither. Made once per message (the tuple
        shared by every reader, none changes it): each of 256 planners takes in every
        claim of a round."""
        c = self.content
        if "object" in c:
            by = self.speaks_for
            return False, c["object"], (by, int(c.get("tick", 0)))
        if "room" in c:
            return True, self.speaks_for, c["room"]
        return None

    @_kept
    def noted(self) -> tuple[str, str, Any] | None:
        """Where a report says an object is, as a reader's memory notes it
        (:meth:`~orgteams.envs.observe.memory.AgentMemory.note_object`): ``(object,
        location, tick)`` of a ``found``, a ``done`` of an object or an ``assign`` that
        names a location (``tick`` None when not said); None for any other message, or
        one missing a field. Made once per message (the tuple shared by every reader):
        each of 256 planners notes every goal object the team reports seeing."""
        c, kind = self.content, self.kind
        try:
            if kind == "found":
                return c["object"], c["location"], c.get("tick")
            if kind == "assign" and "location" in c:
                return c["action"].partition(":")[2], c["location"], c.get("tick")
            if kind == "done" and "object" in c:
                return c["object"], c["location"], c.get("tick")
        except KeyError:  # a malformed report notes nothing
            pass
        return None

    def addressed_to(self, agent: str) -> bool:
        """Whether the speaker addressed ``agent`` (``"everyone"`` addresses all)."""
        return self.receivers == EVERYONE or agent in self.receivers

    @property
    def audience(self) -> tuple[str, ...]:
        """Who it reached (``delivered``), else whom it named; ``()`` means everyone."""
        if self.delivered is not None:
            return self.delivered
        return () if self.receivers == EVERYONE else self.receivers

    @property
    def silent(self) -> bool:
        """A turn with nothing said."""
        return not self.text

    def receivers_json(self) -> list[str] | str:
        """``receivers`` as the log writes them: a list of ids, or ``"everyone"``."""
        return self.receivers if isinstance(self.receivers, str) else list(self.receivers)


# Message intake at team scale. Under ``shared`` each of 256 planners is handed the
# 255 others' messages a round, three in four of them repeats of what it heard the
# round before; filtering them one by one in Python, reader by reader, was a quarter of
# a round. The messages many readers are handed alike are kept once (a Broadcast);
# what every reader derives alike from them (which pass a filter, their said_id, whose
# they are, which of them an earlier broadcast said too) is computed once per
# Broadcast, and each reader looks up in its own set of what it heard only the said_ids
# its latest cut did not already cover (:func:`unseen`): a lookup in one of 256 sets of
# thousands is a cache miss, so the fewer the better.

_FEW = 32  # keys of a cut looked up without asking which an earlier cut covered
_NOWHERE = float("inf")  # the place in an earlier broadcast of a said_id it did not say


class Broadcast(list):
    """Messages handed alike to many readers, in the order said, only ever appended to
    (a round's messages to everyone, the outputs every speaker may see, the shared
    history's claims). Readers are handed :class:`Heard` cuts of it."""

    __slots__ = ("__weakref__", "_derived", "_keys", "_kinds", "_kinds_done")

    def __init__(self, messages: Iterable[TeamMessage] = ()) -> None:
        super().__init__(messages)
        self._keys: dict[tuple, _Keys] = {}  # (kinds skipped, structured) -> its keys
        self._kinds: dict[str, list[int]] = {}  # kind -> places of its messages
        self._kinds_done = 0  # messages indexed by kind so far
        # (kind, derive) -> derive(m) of its messages of that kind, as places_of lists them
        self._derived: dict[tuple[str, Callable], list] = {}

    def _refuse(self, *args, **kwargs):
        raise TypeError("a Broadcast is only appended to: its readers' cuts index into it")

    __setitem__ = __delitem__ = insert = pop = remove = clear = sort = reverse = _refuse
    __imul__ = _refuse

    def keys_for(self, skip: frozenset[str], structured: bool) -> _Keys:
        """The said_ids of its messages that pass the filter, indexed once for all
        readers (extended to what was appended since)."""
        keys = self._keys.get((skip, structured))
        if keys is None:
            keys = self._keys[skip, structured] = _Keys(skip, structured)
        if keys.done < len(self):
            keys.extend(self)
        return keys

    def places_of(self, kind: str) -> Sequence[int]:
        """The places of its messages of ``kind``, ascending, indexed once for all
        readers (extended to what was appended since)."""
        if self._kinds_done < len(self):
            kinds = self._kinds
            for at in range(self._kinds_done, len(self)):
                kinds.setdefault(self[at].kind, []).append(at)
            self._kinds_done = len(self)
        return self._kinds.get(kind, ())

    def derived(self, kind: str, derive: Callable[[TeamMessage], Any]) -> list:
        """``derive(m)`` of each of its messages of ``kind``, as :meth:`places_of` lists
        them, made once per message for all readers (extended to what was appended
        since): every reader gets the same values, so none may change them."""
        places = self.places_of(kind)
        made = self._derived.setdefault((kind, derive), [])
        if len(made) < len(places):
            made += map(derive, map(self.__getitem__, places[len(made):]))
        return made


class _Keys:
    """What every reader of a :class:`Broadcast` derives alike under one filter (kinds
    skipped; ``structured``: content-less ones skipped too): the said_id of each message
    that passes, in order, its place in the broadcast, its message, its index, and
    each sender's said_ids. ``exact`` is False once a said_id cannot be hashed or is
    said twice: then :func:`unseen` reads such a broadcast message by message (the
    same answer, including the error an unhashable one raises)."""

    __slots__ = ("born", "done", "exact", "handed", "index", "keys", "message", "own",
                 "places", "since", "skip", "structured")

    def __init__(self, skip: frozenset[str], structured: bool) -> None:
        self.skip, self.structured = skip, structured
        self.done = 0  # messages of the broadcast indexed so far
        self.exact = True
        self.keys: list[object] = []
        self.born: list[int] = []  # each key's born (a said_id that can be hashed)
        self.places: list[int] = []
        self.message: dict[object, TeamMessage] = {}
        self.index: dict[object, int] = {}
        self.own: dict[str, set[object]] = {}
        # id of an earlier broadcast -> (it, weakly; how many keys of this one were
        # compared with it; those keys' indexes sorted by their index in it; those indexes)
        self.since: dict[int, tuple] = {}
        # (the said_ids a reader was handed, their Handed list): the latest (see hand)
        self.handed: tuple = (None, None)

    def extend(self, broadcast: Broadcast) -> None:
        skip, structured, message = self.skip, self.structured, self.message
        for at in range(self.done, len(broadcast)):
            m = broadcast[at]
            if m.kind in skip or (structured and not m.content):
                continue
            key = m.said_id
            try:
                repeat = key in message
            except TypeError:  # content that cannot be hashed
                repeat = True
            if repeat:
                self.exact = False
                break
            message[key] = m
            self.index[key] = len(self.keys)
            self.keys.append(key)
            self.born.append(key.born)
            self.places.append(at)
            self.own.setdefault(m.sender, set()).add(key)
        self.done = len(broadcast)

    def hand(self, new: list[object]) -> Handed:
        """The messages of the keys ``new`` (a list no one changes) as one
        :class:`Handed` list for the readers handed the same keys in turn: under
        ``shared`` each of 256 readers of a round's messages to everyone is handed the
        same fresh ones (keys compare by identity: a match costs a pass in C)."""
        latest = self.handed  # one read: a reader sees keys with their messages
        if latest[0] == new:
            return latest[1]
        out = Handed(map(self.message.__getitem__, new))
        self.handed = (new, out)
        return out

    def uncovered(self, first: int, last: int, earlier: Broadcast, before: _Keys,
                  low: int, high: int) -> list[int] | None:
        """The indexes in ``[first, last)`` of this broadcast's keys that are not keys
        ``[low, high)`` of ``earlier`` (whose keys are ``before``), ascending; keys
        said after a comparison was made count as not covered (a superset: a reader
        looks them up). None: all of them, or most (then all are looked up). The list
        is shared by the readers that ask alike (none may change it)."""
        if before is self:
            return [*range(first, min(last, low)), *range(max(first, high), last)]
        cached = self.since.get(id(earlier))
        if cached is None or cached[0]() is not earlier or 2 * cached[1] < len(self.keys):
            # compared once per pair of broadcasts for all readers, again when this one
            # doubled since (a growing round: the comparison stays amortized linear)
            index = before.index
            where = [index.get(k, _NOWHERE) for k in self.keys]
            order = sorted(range(len(where)), key=where.__getitem__)
            where = [where[i] for i in order]
            cached = self.since[id(earlier)] = (
                weakref.ref(earlier), len(where), order, where,
                bisect_left(where, _NOWHERE),  # how many it said too
                [(None, None)])  # the latest (first, last, low, high) asked, its answer
        _, compared, order, where, common, latest = cached
        asked = (first, last, low, high)
        if latest[0][0] == asked:
            # each of 256 readers of a round's messages to everyone, whose latest cut
            # was the whole of the round before, asks alike: answered once
            return latest[0][1]
        out = self._uncovered(first, last, low, high, compared, order, where, common)
        latest[0] = (asked, out)  # one store: a reader sees a question with its answer
        return out

    @staticmethod
    def _uncovered(first: int, last: int, low: int, high: int, compared: int,
                   order: list[int], where: list, common: int) -> list[int] | None:
        if not common:
            return None
        lo, hi = bisect_left(where, low, 0, common), bisect_left(where, high, 0, common)
        if 2 * (hi - lo) < min(last, compared) - first:
            return None  # most are uncovered: looking all up beats sorting the rest
        out = sorted(order[:lo] + order[hi:]) if lo or hi < compared else []
        out = out[bisect_left(out, first):bisect_left(out, last)]
        if last > compared:
            out += range(max(first, compared), last)
        return out


class Seen(set):
    """A reader's said_ids heard (a set), which also remembers, per filter, the latest
    :class:`Heard` cut :func:`unseen` took in whole: all of that cut's said_ids but
    those ``without`` said are in the set. Anything that removes from the set forgets
    those cuts (a new episode clears it). ``grown``: taken from :data:`_BORN` whenever
    anything is added, so every said_id it holds was made before it (``born`` less
    than it): one made later is not in it, which :func:`unseen` knows without a lookup."""

    __slots__ = ("cuts", "grown")

    def __init__(self, said: Iterable[object] = ()) -> None:
        try:
            super().__init__(said)
        finally:
            self.grown = next(_BORN)
        # (kinds skipped, structured) -> (broadcast, its _Keys, first, last, without)
        self.cuts: dict[tuple, tuple] = {}


def _forgets_cuts(name: str):
    change = getattr(set, name)

    def changed(self: Seen, *args):
        self.cuts.clear()
        return change(self, *args)

    changed.__name__ = name
    return changed


def _grows(name: str):
    change = getattr(Seen, name)

    def changed(self: Seen, *args):
        try:
            return change(self, *args)
        finally:  # also when it stopped part way (content that cannot be hashed)
            self.grown = next(_BORN)

    changed.__name__ = name
    return changed


for _name in ("clear", "discard", "remove", "pop", "difference_update",
              "intersection_update", "symmetric_difference_update", "__isub__", "__iand__",
              "__ixor__"):
    setattr(Seen, _name, _forgets_cuts(_name))
for _name in ("add", "update", "__ior__", "symmetric_difference_update", "__ixor__"):
    setattr(Seen, _name, _grows(_name))


class Handed(list):
    """Fresh messages :func:`unseen` hands alike to the readers of a broadcast left with
    the same ones in turn (none of them their own): one list for all of them, which is
    why it refuses to be changed; what they derive alike from it they may derive once
    (:mod:`~orgteams.agents.planner.intake`). A reader whose own messages were among
    them is handed its own list, which knows it is ``whole`` (that shared list) less
    the messages ``without`` said; ``whole`` is None for a shared one."""

    whole: Handed | None = None
    without: str | None = None

    @classmethod
    def less(cls, messages: Iterable[TeamMessage], whole: Handed, without: str) -> Handed:
        """``messages``: ``whole`` less the messages ``without`` said, as a list that
        knows it (a shared one is made as a list is, without this)."""
        out = cls(messages)
        out.whole, out.without = whole, without
        return out

    def _refuse(self, *args, **kwargs):
        raise TypeError("a Handed list is shared by its readers: copy it to change it")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


class Heard(list):
    """What one reader is handed of a :class:`Broadcast`: ``source[start:stop]`` less
    the messages ``without`` sent, in order. A plain list to every reader;
    :func:`unseen` reads the source's shared keys instead. Changing the list forgets
    where it was cut from (then it is read message by message)."""

    __slots__ = ("source", "start", "stop", "without")

    def __init__(self, messages: Iterable[TeamMessage] = ()) -> None:
        super().__init__(messages)
        self.source: Broadcast | None = None
        self.start = self.stop = 0
        self.without: str | None = None

    @classmethod
    def cut(cls, source: Broadcast, start: int, stop: int, without: str | None = None,
            places: Sequence[int] = ()) -> Heard:
        """``source[start:stop]`` less the messages at ``places`` (ascending): those of
        ``without``, all of them, as the caller keeps them (:class:`Inboxes` does)."""
        # made without __init__ (its defaults are set below): 256 readers a round are
        # handed a cut, under sequential twice each
        heard, at = list.__new__(cls), start
        for i in places:
            if start <= i < stop:
                list.extend(heard, source[at:i])
                at = i + 1
        list.extend(heard, source[at:stop])
        heard.source, heard.start, heard.stop, heard.without = source, start, stop, without
        return heard


def _forgets(name: str):
    change = getattr(list, name)

    def changed(self: Heard, *args):
        self.source = None
        return change(self, *args)

    changed.__name__ = name
    return changed


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend",
              "insert", "pop", "remove", "clear", "sort", "reverse"):
    setattr(Heard, _name, _forgets(_name))


def of_kind(messages: list[TeamMessage], kind: str,
            derive: Callable[[TeamMessage], Any] | None = None) -> list:
    """The messages of ``kind`` among ``messages``, in order; with ``derive``,
    ``derive(m)`` of each of them instead (``derive`` is a pure function: the same
    value for the same message, whoever asks; a cut's readers share the values, so
    none may change them).

    A :class:`Heard` cut is answered from its broadcast's index by kind and its
    derived values, made once per message for all readers: under ``sequential`` each
    of 256 speakers is handed every earlier output of the round and looks for the few
    chosen actions among them. A cut holds ``source[start:stop]`` less the messages
    ``without`` sent, so those are its messages of ``kind``.
    """
    if type(messages) is Heard and messages.source is not None:
        source, without = messages.source, messages.without
        places = source.places_of(kind)
        first = bisect_left(places, messages.start)
        last = bisect_left(places, messages.stop, first)
        found = source.derived(kind, derive)[first:last] if derive is not None else \
            list(map(source.__getitem__, places[first:last]))
        if without is None:
            return found
        return [v for v, at in zip(found, places[first:last]) if source[at].sender != without]
    found = [m for m in messages if m.kind == kind]
    return found if derive is None else list(map(derive, found))


def unseen(messages: list[TeamMessage], seen: set, skip: Collection[str] = (),
           structured: bool = False) -> list[TeamMessage]:
    """``messages`` of no kind in ``skip`` (and, ``structured``, with content) whose
    :attr:`~TeamMessage.said_id` is not in ``seen``, the first of each, in order; adds
    their said_ids to ``seen``.

    A :class:`Heard` cut read into a :class:`Seen` whose latest cut (same filter)
    covers most of it is answered from its broadcast's keys, computed once for all
    readers (when it says each once, ``exact``): only the keys that cut did not cover
    are looked up (every key of that cut but those its ``without`` said is in ``seen``
    already), and those not in ``seen``, less the ones ``without`` said, are the first
    of each, in order. A cut that no such cut covers (every status changed, every
    claim new) is read from the keys too, all of them looked up. Anything else (a
    plain list, a broadcast that says something twice) is read message by message.
    Readers left with the same messages in turn, none their own, are handed one
    :class:`Handed` list (:meth:`_Keys.hand`), which none may change.
    """
    if type(messages) is Heard and messages.source is not None and type(seen) is Seen:
        source, filter_ = messages.source, (frozenset(skip), structured)
        keys = source.keys_for(*filter_)
        if keys.exact:
            places, stop, without = keys.places, messages.stop, messages.without
            first = bisect_left(places, messages.start) if messages.start else 0
            last = len(places) if stop >= keys.done else bisect_left(places, stop, first)
            cuts = seen.cuts
            latest = cuts.get(filter_)
            # a few keys are looked up at once: finding which an earlier cut covered
            # costs more (most cuts of a round under sequential, leader_first or
            # coordinator: a dozen claims among hundreds of silent turns and actions)
            index = None if latest is None or last - first <= _FEW \
                else keys.uncovered(first, last, *latest[:4])
            # once this call returns, every key of this cut but those without said is seen
            cuts[filter_] = (source, keys, first, last, without)
            if index is None:
                # none covers most of it, or few: look up every key of the cut (in C,
                # and none of what does not pass the filter)
                index = range(first, last)
            elif latest[4] is not None and latest[4] != without:
                # that cut left out its reader's own, this one does not: look them up
                index = sorted({*index, *(i for i in map(keys.index.__getitem__,
                                                         keys.own.get(latest[4], ()))
                                          if first <= i < last)})
            if index is not None:
                # a run of keys (most cuts under leader: each reader's since its last
                # read) is sliced, not mapped key by key
                run = type(index) is range
                new = keys.keys[first:last] if run else list(map(keys.keys.__getitem__, index))
                # keys all made after the reader's set last grew are not in it: no
                # lookup (most of a 256-agent team's round: new claims, changed
                # statuses; a lookup in one of 256 sets of thousands is a cache miss)
                if new and min(keys.born[first:last] if run else
                               map(keys.born.__getitem__, index)) < seen.grown:
                    new = list(filterfalse(seen.__contains__, new))
                if not new:
                    return []
                own = keys.own.get(without) if without is not None else None
                if own:
                    mine = list(filterfalse(own.__contains__, new))
                    if len(mine) < len(new):  # its own left out: a list of its own
                        seen.update(mine)
                        return Handed.less(map(keys.message.__getitem__, mine),
                                           keys.hand(new), without)
                seen.update(new)
                return keys.hand(new)  # what every reader handed these keys is handed
    out = []
    grows = type(seen) is Seen
    # a Seen's own add (set.add and a new ``grown``, once for the whole list, below)
    add = set.add.__get__(seen) if grows else seen.add
    try:
        for m in messages:
            if m.kind in skip or (structured and not m.content):
                continue
            key = m.said_id
            if key not in seen:
                add(key)
                out.append(m)
    finally:  # also when it stopped part way (content that cannot be hashed)
        if grows:
            seen.grown = next(_BORN)
    return out
