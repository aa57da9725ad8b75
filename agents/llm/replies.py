"""Validating a model's reply against its :class:`~orgteams.agents.llm.schemas.ReplySpec`.

Validation is a little more lenient than the schema: an action given by id or label
is accepted; receivers an agent may not message (unknown names, other channels) are
dropped and noted; a message-stage reply in the single-message form
(``{"receivers": [...], "message": "..."}``, what prompt-mode models and replies
written before ``messages`` existed give) is read as a one-item ``messages`` list.
Anything else invalid raises :class:`~orgteams.agents.llm.schemas.ReplyError` with text
written for the model to read and act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orgteams.agents.llm.schemas import (
    MAX_MESSAGES,
    MESSAGE_MAX_CHARS,
    ROLE_MAX_CHARS,
    THOUGHTS_MAX_CHARS,
    ReplyError,
    ReplySpec,
    explain,
)
from orgteams.agents.messages import EVERYONE, TeamMessage

if TYPE_CHECKING:
    from orgteams.agents.llm.prompts import Options
    from orgteams.envs.highlevel.space import ActionId

__all__ = [
    "ActReply",
    "CommunicateReply",
    "OutgoingText",
    "ParsedCommunicate",
    "parse_act",
    "parse_communicate",
    "parse_defer",
]


class ActReply(BaseModel):
    """An act-phase reply (validated after the action is matched to the options)."""

    model_config = ConfigDict(extra="ignore")
    action: str
    thoughts: str = ""


class OutgoingText(BaseModel):
    """One of the messages of a communicate reply: to whom, and what."""

    model_config = ConfigDict(extra="ignore")
    receivers: list[str] = Field(default_factory=list)
    message: str = Field(default="", max_length=MESSAGE_MAX_CHARS)


class CommunicateReply(BaseModel):
    """A communicate-phase reply; which fields are required depends on the stage."""

    model_config = ConfigDict(extra="ignore")
    abstain: bool = False
    role: str | None = Field(default=None, max_length=ROLE_MAX_CHARS)
    assignments: dict[str, str] = Field(default_factory=dict)
    messages: list[OutgoingText] = Field(default_factory=list, max_length=MAX_MESSAGES)
    message: str = Field(default="", max_length=MESSAGE_MAX_CHARS)
    vote: str | None = None
    thoughts: str = ""


def _check_object(parsed: Any, spec: ReplySpec, present: set[str] = frozenset()
                  ) -> dict[str, Any]:
    if not isinstance(parsed, dict):
        raise ReplyError("it is not a JSON object")
    missing = [f for f in spec.required if f not in parsed and f not in present]
    if missing:
        raise ReplyError(f"missing field {', '.join(repr(m) for m in missing)}")
    return parsed


def _clip(text: str, notes: list[str]) -> str:
    if len(text) > THOUGHTS_MAX_CHARS:
        notes.append(f"thoughts cut from {len(text)} to {THOUGHTS_MAX_CHARS} characters")
        return text[:THOUGHTS_MAX_CHARS]
    return text


def parse_act(parsed: Any, spec: ReplySpec, options: Options
              ) -> tuple[ActionId, str, list[str]]:
    """Validate an act reply.

    Args:
        parsed: The JSON object from the reply (or None when it was not JSON).
        spec: From :func:`~orgteams.agents.llm.schemas.act_spec`.
        options: The lettered menu the prompt showed (an action is read back by its
            letter, id or label).

    Returns:
        ``(action_id, thoughts, notes)``.

    Raises:
        ReplyError: Not an object, no action, or an action not in the list.
    """
    data = _check_object(parsed, spec)
    try:
        reply = ActReply.model_validate(data)
    except ValidationError as exc:
        raise ReplyError(explain(exc)) from None
    notes: list[str] = []
    wanted = reply.action.strip()
    found = options.find(wanted.rstrip(".").strip())
    if found is None:
        raise ReplyError(f"action {wanted!r} is not one of {', '.join(options.letters)}")
    letter, action_id = found
    if wanted.rstrip(".").strip().casefold() != letter.casefold():
        notes.append(f"action given as {wanted!r}, matched to {letter}")
    return action_id, _clip(reply.thoughts, notes), notes


_SHOWN_CHARS = 40
"""Most characters of a rejected ``defer_to`` value a note keeps (it is model text)."""


def parse_defer(parsed: Any, spec: ReplySpec, heard: dict[str, str], notes: list[str]
                ) -> str | None:
    """The teammate an act reply says the member gave way to (``defer_to``), or None.

    Only a teammate the prompt showed (``heard``: agent id -> display name; the spec
    offered their names) is taken; any other value (not a string, an unknown name, the
    member itself, a teammate not heard, a field not offered) is never trusted: None,
    and ``notes`` gets a line with the value (cut, one line: it is model text). A
    rejected value does not make the reply invalid (its action stands).

    Args:
        parsed: The reply's JSON object (already valid as an act reply).
        spec: From :func:`~orgteams.agents.llm.schemas.act_spec`.
        heard: The teammates whose messages or chosen actions the prompt showed.
        notes: The decision's notes.
    """
    if not isinstance(parsed, dict) or "defer_to" not in parsed:
        return None
    given = parsed["defer_to"]
    if "defer_to" not in spec.schema["properties"]:
        notes.append("ignored field 'defer_to': not offered (no teammate heard)")
        return None
    if isinstance(given, str) and not given.strip():
        return None
    names = _lookup(heard)
    agent = names.get(given.strip().casefold()) if isinstance(given, str) else None
    if agent is None:
        shown = " ".join(str(given).split())
        shown = shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + "..."
        notes.append(f"defer_to {shown!r} not recorded: not a teammate you heard")
    return agent


Receivers = tuple[str, ...] | str
"""Agent ids, or ``"everyone"``."""


@dataclass
class ParsedCommunicate:
    """A validated communicate reply with receivers mapped to agent ids.

    Attributes:
        messages: The messages to send, in the reply's order (empty: silence), each a
            :class:`~orgteams.agents.messages.TeamMessage` from the speaker to agent ids
            or ``"everyone"`` (the round loop stamps its stage and ``delivered``).
    """

    abstain: bool = False
    role: str | None = None
    messages: list[TeamMessage] = field(default_factory=list)
    vote: str | None = None
    thoughts: str = ""
    assignments: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _lookup(names: dict[str, str]) -> dict[str, str]:
    """Case-insensitive name-or-id -> agent id."""
    table = {a.casefold(): a for a in names}
    table.update({n.casefold(): a for a, n in names.items()})
    return table


_SINGLE = ("receivers", "message")  # the single-message form of a message-stage reply


def parse_communicate(
    parsed: Any,
    spec: ReplySpec,
    team: dict[str, str],
    can_message: Sequence[str],
    candidates: list[str] | None = None,
    *,
    sender: str = "",
    round: int = 0,
) -> ParsedCommunicate:
    """Validate a communicate reply and map display names to agent ids.

    Receivers not in ``can_message`` (unknown names, forbidden channels) are dropped and
    noted; fields the stage does not offer (e.g. ``abstain`` when not allowed) are
    ignored and noted.

    Args:
        parsed: The JSON object from the reply (or None).
        spec: From :func:`~orgteams.agents.llm.schemas.communicate_spec`.
        team: Agent id -> display name.
        can_message: Agent ids this agent may message.
        candidates: Agent ids that may be voted for.
        sender, round: The speaking agent and the round, which its messages carry.

    Raises:
        ReplyError: Not an object, a missing or too long field, more than
            :data:`~orgteams.agents.llm.schemas.MAX_MESSAGES` messages, an invalid vote,
            or non-empty messages none of which names a teammate it may message.
    """
    offered = spec.schema["properties"]
    single = "messages" in offered and isinstance(parsed, dict) and "messages" not in parsed \
        and any(k in parsed for k in _SINGLE)
    data = _check_object(parsed, spec, {"messages"} if single else set())
    if single:
        data = {k: v for k, v in data.items() if k not in _SINGLE}
        data["messages"] = [{k: parsed[k] for k in _SINGLE if k in parsed}]
    try:
        reply = CommunicateReply.model_validate(data)
    except ValidationError as exc:
        text = explain(exc)
        raise ReplyError(text.replace("field 'messages.0.", "field '") if single
                         else text) from None
    out = ParsedCommunicate()
    for extra in ("abstain", "role", "receivers", "messages", "assignments", "message", "vote"):
        if extra in data and extra not in offered:
            out.notes.append(f"ignored field {extra!r}: not offered in this stage")
    names = _lookup(team)
    if "vote" in offered:
        allowed = candidates or []
        vote = names.get((reply.vote or "").strip().casefold())
        if vote not in allowed:
            choices = ", ".join(team.get(c, c) for c in allowed)
            raise ReplyError(f"vote {reply.vote!r} is not one of {choices}")
        out.vote = vote
    out.abstain = reply.abstain if "abstain" in offered else False
    out.role = ((reply.role or "").strip() or None) if "role" in offered else None
    if "messages" in offered:
        most = offered["messages"]["maxItems"]
        if len(reply.messages) > most:  # fewer than MAX_MESSAGES: the organization's budget
            raise ReplyError(f"field 'messages': at most {most} message(s), got "
                             f"{len(reply.messages)}")
        chars = offered["messages"]["items"]["properties"]["message"]["maxLength"]
        for i, item in enumerate(reply.messages):
            if len(item.message) > chars:  # the texts share MESSAGE_MAX_CHARS
                raise ReplyError(f"field '{'' if single else f'messages.{i}.'}message': "
                                 f"String should have at most {chars} characters")
        if single:
            out.notes.append("reply in the single-message form (no 'messages' list) read "
                             "as one message")
        out.messages = _messages(reply.messages, offered["messages"], names, can_message,
                                 out.notes, sender, round)
    elif "message" in offered and reply.message.strip():  # intentions, claims: public
        out.messages.append(TeamMessage(sender, EVERYONE, reply.message.strip(), round=round))
    if "assignments" in offered:
        out.assignments = _assignments(reply.assignments, offered["assignments"], names)
    out.thoughts = _clip(reply.thoughts, out.notes)
    return out


def _messages(items: list[OutgoingText], schema: dict[str, Any], names: dict[str, str],
              can_message: Sequence[str], notes: list[str], sender: str, round: int
              ) -> list[TeamMessage]:
    """One message from ``sender`` in ``round`` per item with text. A message
    that names no teammate the agent may message is dropped and noted when another one
    is sent; when none is, the reply is invalid (the model is asked to correct it)."""
    sent: list[TeamMessage] = []
    undeliverable: list[str] = []
    for i, item in enumerate(items):
        text = item.message.strip()
        receivers = _receivers(item.receivers, names, can_message, notes)
        if text and receivers:
            sent.append(TeamMessage(sender, receivers, text, round=round))
        elif text:
            where = f"message {i + 1}: " if len(items) > 1 else ""
            undeliverable.append(f"{where}receivers {item.receivers!r} name no teammate you "
                                 "may message")
    if undeliverable and not sent:
        choices = schema["items"]["properties"]["receivers"]["items"]["enum"]
        raise ReplyError(f"{undeliverable[0]}; use names from {', '.join(choices)}")
    notes += [f"dropped {u}" for u in undeliverable]
    return sent


def _assignments(given: dict[str, str], schema: dict[str, Any], names: dict[str, str]
                 ) -> dict[str, str]:
    """Teammate id -> assigned option label; every teammate offered must get one."""
    out = {}
    for name, prop in schema["properties"].items():
        label = (given.get(name) or "").strip()
        if label not in prop["enum"]:
            raise ReplyError(f"assignment for {name} {label!r} is not one of "
                             f"{', '.join(prop['enum'])}")
        out[names[name.casefold()]] = label
    return out


def _receivers(given: list[str], names: dict[str, str], can_message: Sequence[str],
               notes: list[str]) -> Receivers:
    if any(r.strip().casefold() in (EVERYONE, "all") for r in given):
        return EVERYONE
    ids: list[str] = []
    for r in given:
        agent = names.get(r.strip().casefold())
        if agent in can_message:
            ids.append(agent)
        else:
            notes.append(f"dropped receiver {r!r}: not a teammate you may message")
    return tuple(dict.fromkeys(ids))
