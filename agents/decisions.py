"""Structured replies: JSON schemas built per call, pydantic validation, corrections.

A reply spec (:class:`ReplySpec`) says what the model must answer right now: the JSON
schema sent to the backend (enums of the currently valid action letters, receiver
names and vote candidates, so constrained decoding can only produce valid choices;
short fields first and every free-text field bounded, because a reply cut off by
``max_tokens`` is invalid JSON), a plain description of every field and a hint for
the correction message. There is deliberately no example reply: a small model copies
an example's values (its option, message and reason) instead of deciding, and a
schema-constrained reply needs none. Validation is a little more lenient than the
schema (an action given by id or label is accepted; unknown receivers are dropped and
noted) and raises
:class:`ReplyError` with text written for the model to read and act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "MESSAGE_MAX_CHARS",
    "ROLE_MAX_CHARS",
    "THOUGHTS_MAX_CHARS",
    "ActReply",
    "CommunicateReply",
    "ParsedCommunicate",
    "ReplyError",
    "ReplySpec",
    "act_spec",
    "communicate_spec",
    "parse_act",
    "parse_communicate",
]

MESSAGE_MAX_CHARS = 300
"""Longest message an agent may send (characters)."""
ROLE_MAX_CHARS = 40
"""Longest self-chosen role (characters)."""
THOUGHTS_MAX_CHARS = 200
"""Longest stated reasoning kept (characters); longer thoughts are cut, not rejected."""
EVERYONE = "everyone"


class ReplyError(ValueError):
    """The model's reply is invalid; the text is shown to the model in the correction."""


class ActReply(BaseModel):
    """An act-phase reply (validated after the action is matched to the options)."""

    model_config = ConfigDict(extra="ignore")
    action: str
    thoughts: str = ""


class CommunicateReply(BaseModel):
    """A communicate-phase reply; which fields are required depends on the stage."""

    model_config = ConfigDict(extra="ignore")
    abstain: bool = False
    role: str | None = Field(default=None, max_length=ROLE_MAX_CHARS)
    receivers: list[str] = Field(default_factory=list)
    assignments: dict[str, str] = Field(default_factory=dict)
    message: str = Field(default="", max_length=MESSAGE_MAX_CHARS)
    vote: str | None = None
    thoughts: str = ""


Assignees = tuple[tuple[str, tuple[str, ...]], ...]
"""``((display name, (option label, ...)), ...)``: what a leader may assign to whom."""


@dataclass(frozen=True)
class ReplySpec:
    """What the model must answer now.

    Attributes:
        phase: ``"act"`` or the communicate stage kind.
        schema: The JSON schema sent to the backend.
        fields: What each field holds, in words (shown in the prompt and corrections);
            never a concrete value a model could copy.
        hint: The rule that most often goes wrong, e.g. ``action must be one of A, B``.
        required: Fields a reply must contain (``thoughts`` is never required).
    """

    phase: str
    schema: dict[str, Any]
    fields: str
    hint: str
    required: tuple[str, ...] = field(default=())


def _text(max_chars: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_chars}


_THOUGHTS = f'"thoughts": why, in a few words (at most {THOUGHTS_MAX_CHARS} characters)'


def _describe(parts: list[str]) -> str:
    return "; ".join(parts) + "."


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@lru_cache(maxsize=256)
def act_spec(options: tuple[str, ...]) -> ReplySpec:
    """The act reply for the lettered options, e.g. ``("A", "B", "C")``."""
    if not options:
        raise ValueError("act_spec needs at least one action letter")
    schema = _object(
        {"action": {"type": "string", "enum": list(options)},
         "thoughts": _text(THOUGHTS_MAX_CHARS)}
    )
    fields = _describe([f'"action": the letter of the action you choose '
                        f'(one of {", ".join(options)})', _THOUGHTS])
    return ReplySpec("act", schema, fields, f"action must be one of {', '.join(options)}",
                     ("action",))


@lru_cache(maxsize=256)
def communicate_spec(
    stage_kind: str,
    receivers: tuple[str, ...],
    *,
    allow_abstain: bool = False,
    self_chosen_roles: bool = False,
    candidates: tuple[str, ...] = (),
    assignees: Assignees = (),
) -> ReplySpec:
    """The communicate reply for one stage.

    Args:
        stage_kind: ``"message"``, ``"plan"``, ``"intention"``, ``"claim"`` or ``"vote"``.
        receivers: Display names this agent may message (``"everyone"`` is added).
        allow_abstain: Add the ``abstain`` field.
        self_chosen_roles: Add the ``role`` field (always present in claim stages).
        candidates: Display names that may be voted for (vote stages).
        assignees: A leader's teammates and the actions each may be given (message and
            plan stages): adds ``assignments``, one enum per teammate, so a reply can
            only assign a teammate an action that teammate can take.

    Raises:
        ValueError: Unknown stage kind, or a vote stage without candidates.
    """
    props: dict[str, Any] = {}
    fields: list[str] = []
    hints: list[str] = []
    if stage_kind == "vote":
        if not candidates:
            raise ValueError("a vote stage needs candidates")
        props["vote"] = {"type": "string", "enum": list(candidates)}
        fields.append(f'"vote": the name you vote for (one of {", ".join(candidates)})')
        hints.append(f"vote must be one of {', '.join(candidates)}")
    elif stage_kind in ("message", "plan", "intention", "claim"):
        if allow_abstain:
            props["abstain"] = {"type": "boolean"}
            fields.append('"abstain": true to sit this round out (you wait), else false')
        if self_chosen_roles or stage_kind == "claim":
            props["role"] = _text(ROLE_MAX_CHARS)
            fields.append(f'"role": the role you take this round, in a few words '
                          f'(at most {ROLE_MAX_CHARS} characters)')
            hints.append(f"role must be at most {ROLE_MAX_CHARS} characters")
        if stage_kind in ("message", "plan") and receivers:
            names = [*receivers, EVERYONE]
            props["receivers"] = {
                "type": "array", "items": {"type": "string", "enum": names},
                # at least one: a small model otherwise leaves it empty and writes the
                # names into the message (silence is an empty message, not no receivers)
                "minItems": 1, "maxItems": len(names),
            }
            fields.append(f'"receivers": a list of the names you write to, from '
                          f'{", ".join(names)}')
            hints.insert(0, f"receivers must be names from {', '.join(names)}")
        if stage_kind in ("message", "plan") and assignees:
            props["assignments"] = _object(
                {name: {"type": "string", "enum": list(labels)} for name, labels in assignees})
            fields.append('"assignments": one action for each teammate (' + "; ".join(
                f"{name}: one of {', '.join(labels)}" for name, labels in assignees) + ")")
            hints.append("each assignment must be one of that teammate's actions")
        if receivers or stage_kind in ("intention", "claim"):
            props["message"] = _text(MESSAGE_MAX_CHARS)
            fields.append(f'"message": what you tell them, in your own words (at most '
                          f'{MESSAGE_MAX_CHARS} characters; an empty string means silence)')
            hints.append(f'message must be at most {MESSAGE_MAX_CHARS} characters ("" = silence)')
    else:
        raise ValueError(
            f"unknown stage kind {stage_kind!r}; known: message, plan, intention, claim, vote"
        )
    props["thoughts"] = _text(THOUGHTS_MAX_CHARS)
    fields.append(_THOUGHTS)
    required = tuple(p for p in props if p != "thoughts")
    return ReplySpec(stage_kind, _object(props), _describe(fields), "; ".join(hints), required)


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "reply"
        parts.append(f"field {where!r}: {err['msg']}")
    return "; ".join(parts)


def _check_object(parsed: Any, spec: ReplySpec) -> dict[str, Any]:
    if not isinstance(parsed, dict):
        raise ReplyError("it is not a JSON object")
    missing = [f for f in spec.required if f not in parsed]
    if missing:
        raise ReplyError(f"missing field {', '.join(repr(m) for m in missing)}")
    return parsed


def _clip(text: str, notes: list[str]) -> str:
    if len(text) > THOUGHTS_MAX_CHARS:
        notes.append(f"thoughts cut from {len(text)} to {THOUGHTS_MAX_CHARS} characters")
        return text[:THOUGHTS_MAX_CHARS]
    return text


def parse_act(
    parsed: Any, spec: ReplySpec, options: list[tuple[str, str, str]]
) -> tuple[str, str, list[str]]:
    """Validate an act reply.

    Args:
        parsed: The JSON object from the reply (or None when it was not JSON).
        spec: From :func:`act_spec`.
        options: ``(letter, action_id, label)`` per available action.

    Returns:
        ``(action_id, thoughts, notes)``.

    Raises:
        ReplyError: Not an object, no action, or an action not in the list.
    """
    data = _check_object(parsed, spec)
    try:
        reply = ActReply.model_validate(data)
    except ValidationError as exc:
        raise ReplyError(_explain(exc)) from None
    notes: list[str] = []
    wanted = reply.action.strip()
    key = wanted.rstrip(".").strip().casefold()
    for letter, action_id, label in options:
        if key in (letter.casefold(), action_id.casefold(), label.casefold()):
            if key != letter.casefold():
                notes.append(f"action given as {wanted!r}, matched to {letter}")
            return action_id, _clip(reply.thoughts, notes), notes
    letters = ", ".join(letter for letter, _, _ in options)
    raise ReplyError(f"action {wanted!r} is not one of {letters}")


@dataclass
class ParsedCommunicate:
    """A validated communicate reply with receivers mapped to agent ids."""

    abstain: bool = False
    role: str | None = None
    receivers: tuple[str, ...] | str = ()
    message: str = ""
    vote: str | None = None
    thoughts: str = ""
    assignments: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _lookup(names: dict[str, str]) -> dict[str, str]:
    """Case-insensitive name-or-id -> agent id."""
    table = {a.casefold(): a for a in names}
    table.update({n.casefold(): a for a, n in names.items()})
    return table


def parse_communicate(
    parsed: Any,
    spec: ReplySpec,
    team: dict[str, str],
    can_message: list[str],
    candidates: list[str] | None = None,
) -> ParsedCommunicate:
    """Validate a communicate reply and map display names to agent ids.

    Receivers not in ``can_message`` (unknown names, forbidden channels) are dropped and
    noted; fields the stage does not offer (e.g. ``abstain`` when not allowed) are
    ignored and noted.

    Args:
        parsed: The JSON object from the reply (or None).
        spec: From :func:`communicate_spec`.
        team: Agent id -> display name.
        can_message: Agent ids this agent may message.
        candidates: Agent ids that may be voted for.

    Raises:
        ReplyError: Not an object, a missing or too long field, an invalid vote, or a
            non-empty message whose receivers are all unknown.
    """
    data = _check_object(parsed, spec)
    try:
        reply = CommunicateReply.model_validate(data)
    except ValidationError as exc:
        raise ReplyError(_explain(exc)) from None
    offered = spec.schema["properties"]
    out = ParsedCommunicate()
    for extra in ("abstain", "role", "receivers", "assignments", "message", "vote"):
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
    out.message = reply.message.strip() if "message" in offered else ""
    if "receivers" in offered:
        out.receivers = _receivers(reply.receivers, names, can_message, out.notes)
        if out.message and not out.receivers:
            raise ReplyError(
                f"receivers {reply.receivers!r} name no teammate you may message; "
                f"use names from {', '.join(offered['receivers']['items']['enum'])}"
            )
    elif out.message:
        out.receivers = EVERYONE  # intentions and claims are public
    if "assignments" in offered:
        out.assignments = _assignments(reply.assignments, offered["assignments"], names)
    out.thoughts = _clip(reply.thoughts, out.notes)
    return out


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


def _receivers(
    given: list[str], names: dict[str, str], can_message: list[str], notes: list[str]
) -> tuple[str, ...] | str:
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
