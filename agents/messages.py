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

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from orgteams.envs.core.limits import MESSAGE_MAX_CHARS

__all__ = ["EVERYONE", "MESSAGE_KINDS", "MESSAGE_MAX_CHARS", "Everyone", "Receivers", "TeamMessage",
           "render"]

EVERYONE = "everyone"  # the one spelling of "every other team member"
Everyone = Literal["everyone"]
Receivers = tuple[str, ...] | Everyone
MESSAGE_KINDS = ("claim", "release", "found", "assign", "done", "status", "correct", "text",
                 "action")
# "action": not a message but an agent's chosen action shown to later agents of a
# sequential round (orgteams.agents.shared_context); never delivered, no tokens.


class _Said:
    """One value of :attr:`TeamMessage.said` (:attr:`TeamMessage.said_id`)."""

    __slots__ = ("__weakref__", "key")

    def __init__(self, key: tuple) -> None:
        self.key = key


# said -> its object while anything (a message, a reader's memory) keeps it; an equal
# value said later gets that same object, or a new one when none is kept any more
_SAID_IDS: weakref.WeakValueDictionary[tuple, _Said] = weakref.WeakValueDictionary()
_SAID_LOCK = threading.Lock()


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

    @classmethod
    def structured(cls, sender: str, receivers: Receivers, kind: str,
                   content: Mapping[str, Any]) -> TeamMessage:
        """A structured message whose ``text`` is its rendering (:func:`render`)."""
        if kind not in MESSAGE_KINDS:
            raise ValueError(f"message kind {kind!r} must be one of {', '.join(MESSAGE_KINDS)}")
        return cls(sender, receivers, render(kind, content), kind, content=dict(content))

    @cached_property
    def said(self) -> tuple:
        """What was said, whoever it reached and whenever: sender, kind and content (its
        items sorted); the same for a repeat. Computed once per message, which a
        256-agent team hands to hundreds of readers."""
        return (self.sender, self.kind, tuple(sorted(self.content.items())))

    @cached_property
    def said_id(self) -> object:
        """:attr:`said` as one object for all equal ones while any of them is kept: it
        hashes and compares by identity, so a reader's set of what it heard finds a
        repeat without hashing the content again (each of 256 planners reads 256 status
        reports a round). Content that cannot be hashed gives :attr:`said` itself."""
        key = self.said
        try:
            hash(key)
        except TypeError:
            return key
        with _SAID_LOCK:  # one object per value, whichever thread asks first
            ident = _SAID_IDS.get(key)
            if ident is None:
                ident = _SAID_IDS[key] = _Said(key)
        return ident

    @cached_property
    def speaks_for(self) -> str:
        """Whom it speaks for: the teammate a leader's claim is ``for`` (the report it
        ordered), the reporter of a report relayed ``by`` a leader, else its sender.
        Read once per message: each of 256 planners reads every claim."""
        c = self.content
        return str(c.get("for") or c.get("by") or self.sender)

    @cached_property
    def doing(self) -> tuple[str, str]:
        """The action a ``status`` says its sender does, as ``(kind, target)``
        (``("grab", "cupcake_2")``; ``("", "")`` when it says none). Read once per
        message: each of 256 planners reads 255 status reports a round."""
        kind, _, target = str(self.content.get("doing", "")).partition(":")
        return kind, target

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
