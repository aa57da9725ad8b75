"""Structured replies: the JSON schema each call asks for, and the reply error type.

A reply spec (:class:`ReplySpec`) says what the model must answer right now: the JSON
schema sent to the backend (enums of the currently valid action letters, receiver
names and vote candidates, so constrained decoding can only produce valid choices;
short fields first and every free-text field bounded, because a reply cut off by
``max_tokens`` is invalid JSON), a plain description of every field and a hint for
the correction message. There is deliberately no example reply: a small model copies
an example's values (its option, message and reason) instead of deciding, and a
schema-constrained reply needs none. Replies are validated by
:mod:`orgteams.agents.llm.replies`, which raises :class:`ReplyError` with text written
for the model to read and act on.

In message and plan stages an agent may send distinct messages to different
teammates (the organized-teams paper, §3.1): ``messages`` is a list of at most
:data:`MAX_MESSAGES` ``{receivers, message}`` objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from orgteams.agents.messages import EVERYONE, MESSAGE_MAX_CHARS

__all__ = [
    "MAX_MESSAGES",
    "MESSAGE_MAX_CHARS",
    "ROLE_MAX_CHARS",
    "THOUGHTS_MAX_CHARS",
    "ReplyError",
    "ReplySpec",
    "act_spec",
    "communicate_spec",
    "explain",
]

ROLE_MAX_CHARS = 40
"""Longest self-chosen role (characters)."""
THOUGHTS_MAX_CHARS = 200
"""Longest stated reasoning kept (characters); longer thoughts are cut, not rejected."""
MAX_MESSAGES = 3
"""Most distinct messages an agent may send in one message or plan stage. Their texts
share :data:`MESSAGE_MAX_CHARS` (each at most ``MESSAGE_MAX_CHARS // max_messages``), so
a reply with every message full still fits a small completion budget: a reply cut off
by ``max_tokens`` is invalid JSON."""


class ReplyError(ValueError):
    """The model's reply is invalid; the text is shown to the model in the correction."""


Assignees = tuple[tuple[str, tuple[str, ...]], ...]
"""``((display name, (option label, ...)), ...)``: what a leader may assign to whom."""


@dataclass(frozen=True, init=False)
class ReplySpec:
    """What the model must answer now; frozen, so cached specs are safe to share.

    Attributes:
        phase: ``"act"`` or the communicate stage kind.
        schema_json: The JSON schema sent to the backend, as JSON text.
        fields: What each field holds, in words (shown in the prompt and corrections);
            never a concrete value a model could copy.
        hint: The rule that most often goes wrong, e.g. ``action must be one of A, B``.
        required: Fields a reply must contain (``thoughts`` is never required).

    :attr:`schema` is a fresh dict on every access: a caller that changes it cannot
    change the spec (``act_spec`` and ``communicate_spec`` cache their specs).
    """

    phase: str
    schema_json: str
    fields: str
    hint: str
    required: tuple[str, ...]

    def __init__(self, phase: str, schema: dict[str, Any], fields: str, hint: str,
                 required: tuple[str, ...] = ()) -> None:
        for name, value in (("phase", phase), ("schema_json", json.dumps(schema)),
                            ("fields", fields), ("hint", hint), ("required", tuple(required))):
            object.__setattr__(self, name, value)

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON schema (a fresh copy)."""
        return json.loads(self.schema_json)


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
def act_spec(options: tuple[str, ...], heard: tuple[str, ...] = ()) -> ReplySpec:
    """The act reply for the lettered options, e.g. ``("A", "B", "C")``.

    Args:
        options: The option letters.
        heard: Display names of the teammates whose messages or chosen actions the
            prompt shows: adds the optional ``defer_to`` field (one of them, or ``""``
            for nobody, listed first), the teammate whose claim or choice the member gave
            way to (the dependency graph's deference, docs/metrics.md). A reply
            without it is valid.
    """
    if not options:
        raise ValueError("act_spec needs at least one action letter")
    props: dict[str, Any] = {"action": {"type": "string", "enum": list(options)}}
    fields = [f'"action": the letter of the action you choose (one of {", ".join(options)})']
    if heard:
        # "" first: a model that takes the first value defers to nobody
        props["defer_to"] = {"type": "string", "enum": ["", *heard]}
        fields.append(f'"defer_to": the teammate whose claim or choice you gave way to '
                      f'(one of {", ".join(heard)}; "" if nobody)')
    props["thoughts"] = _text(THOUGHTS_MAX_CHARS)
    fields.append(_THOUGHTS)
    return ReplySpec("act", _object(props), _describe(fields),
                     f"action must be one of {', '.join(options)}", ("action",))


@lru_cache(maxsize=256)
def communicate_spec(
    stage_kind: str,
    receivers: tuple[str, ...],
    *,
    allow_abstain: bool = False,
    self_chosen_roles: bool = False,
    candidates: tuple[str, ...] = (),
    assignees: Assignees = (),
    max_messages: int = MAX_MESSAGES,
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
        max_messages: Most distinct messages of a message or plan stage, 1 to
            :data:`MAX_MESSAGES` (an organization's budget may allow fewer).

    Raises:
        ValueError: Unknown stage kind, a vote stage without candidates, or
            ``max_messages`` out of range.
    """
    if not 1 <= max_messages <= MAX_MESSAGES:
        raise ValueError(f"max_messages must be 1 to {MAX_MESSAGES}, got {max_messages}")
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
        if stage_kind in ("message", "plan") and assignees:
            props["assignments"] = _object(
                {name: {"type": "string", "enum": list(labels)} for name, labels in assignees})
            fields.append('"assignments": one action for each teammate (' + "; ".join(
                f"{name}: one of {', '.join(labels)}" for name, labels in assignees) + ")")
            hints.append("each assignment must be one of that teammate's actions")
        if stage_kind in ("message", "plan") and receivers:
            names = [*receivers, EVERYONE]
            chars = MESSAGE_MAX_CHARS // max_messages
            props["messages"] = _messages(names, max_messages, chars)
            how_many = (f"a list of 1 to {max_messages} messages" if max_messages > 1
                        else "a list of one message")
            fields.append(
                f'"messages": {how_many}, each with "receivers" '
                f'(a list of the names you write to, from {", ".join(names)}) and "message" '
                f"(what you tell them, in your own words, at most {chars} "
                'characters; "" means silence)' + (
                    "; write a separate message only to tell different teammates "
                    "different things" if max_messages > 1 else ""))
            hints.insert(0, f"receivers must be names from {', '.join(names)}")
            hints.append(f"at most {max_messages} message{'s' if max_messages > 1 else ''} "
                         f'of at most {chars} characters each ("" = silence)')
        elif stage_kind in ("intention", "claim"):
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


def _messages(names: list[str], most: int, chars: int) -> dict[str, Any]:
    """The ``messages`` schema: 1 to ``most`` objects of receivers and text (at most
    ``chars`` characters each)."""
    return {
        "type": "array",
        "minItems": 1,
        "maxItems": most,
        "items": _object({
            # at least one receiver: a small model otherwise leaves it empty and writes
            # the names into the message (silence is an empty message, not no receivers)
            "receivers": {"type": "array", "items": {"type": "string", "enum": names},
                          "minItems": 1, "maxItems": len(names)},
            "message": _text(chars),
        }),
    }


def explain(exc: ValidationError) -> str:
    """A model reply's pydantic errors as ``field 'a.b': message`` joined by ``; `` (the
    text the model reads in its correction; people's files use ``validation_line``)."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "reply"
        parts.append(f"field {where!r}: {err['msg']}")
    return "; ".join(parts)
