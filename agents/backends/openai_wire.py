"""The OpenAI chat-completions wire format: one request per structured-output mode, and
the reply normalized to a :class:`~orgteams.agents.backends.base.Completion`.

A reply is stored once and capped: the completion's ``text`` is the assistant text
scrubbed and cut by :func:`~orgteams.agents.backends.redact.capped_reply` (100,000
characters; a cut one ends with a note of its full length), and ``raw`` is the rest of
the wire response, without the text again, every string in it cut to
:data:`MAX_RAW_STRING` characters and scrubbed.

Which mode a server gets, retries and downgrades are
:class:`~orgteams.agents.backends.openai_backend.OpenAIBackend`'s job; this module
only translates.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from orgteams.agents.backends.base import ChatMessage, Completion, Usage, parse_json_reply
from orgteams.agents.backends.redact import capped_reply, cut_scrubbed, scrub_text, scrub_value
from orgteams.agents.backends.retry import UnexpectedBody

__all__ = ["MAX_RAW_CHARS", "MAX_RAW_STRING", "MODES", "request_kwargs", "to_completion"]

MAX_RAW_STRING = 1_000
"""Longest string kept in a completion's ``raw`` wire response."""
MAX_RAW_CHARS = 20_000
"""Largest ``raw`` kept (JSON characters); past it only ``id``, ``model``, ``usage`` and
each choice's ``finish_reason`` are."""
_RAW_KEEP = ("id", "object", "created", "model", "usage")

MODES = ("json_schema", "json_object", "prompt")
"""Structured-output modes, most to least strict (see the backend's module docstring)."""

_INSTRUCTION = (
    "Reply with exactly one JSON object that follows this JSON schema, and nothing else "
    "(no prose, no code fence):\n{schema}"
)


def _schema_name(schema: dict[str, Any]) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title", "reply")))[:64] or "reply"


def request_kwargs(model: str, mode: str, messages: list[ChatMessage],
                   schema: dict[str, Any] | None, temperature: float, max_tokens: int,
                   seed: int | None) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments of one request in ``mode``."""
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": list(messages),
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if seed is not None:
        kwargs["seed"] = seed
    if schema is None:
        return kwargs
    if mode == "json_schema":
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(schema), "schema": schema, "strict": False},
        }
        return kwargs
    # The instruction also satisfies OpenAI's rule that json_object requests say "JSON".
    instruction = _INSTRUCTION.format(schema=json.dumps(schema))
    kwargs["messages"] = [*messages, {"role": "system", "content": instruction}]
    if mode == "json_object":
        kwargs["response_format"] = {"type": "json_object", "schema": schema}
    return kwargs


def _raw(response: Any, scrub: Callable[[str], str]) -> dict[str, Any]:
    """The wire response as stored: no message content (it is the completion's text),
    every string cut and scrubbed, and only the essentials when the rest is too big."""
    # warnings=False: a field the SDK did not check (usage "lots") is stored as sent,
    # without pydantic's warning on the terminal
    raw = response.model_dump(mode="json", warnings=False)
    for choice in raw.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict) and message.get("content") is not None:
            message["content"] = None  # stored once, as Completion.text
    raw = scrub_value(raw, lambda s: cut_scrubbed(s, MAX_RAW_STRING, scrub))
    size = len(json.dumps(raw))
    if size <= MAX_RAW_CHARS:
        return raw
    slim = {k: raw[k] for k in _RAW_KEEP if k in raw and len(json.dumps(raw[k])) < 1_000}
    slim["choices"] = [{"index": c.get("index"), "finish_reason": c.get("finish_reason")}
                       for c in (raw.get("choices") or [])[:8] if isinstance(c, dict)]
    slim["cut"] = f"raw response of {size:,} characters over the {MAX_RAW_CHARS:,} cap"
    return slim


def _reply_text(choice: Any) -> str:
    """The first choice's assistant text: its ``content`` (None: empty), or the text
    parts of a list of content parts (``[{"type": "text", "text": ...}]``).

    Raises:
        UnexpectedBody: The choice has no message, or a content that is no text (the
            SDK does not check them; they were an AttributeError or TypeError deep in
            the run).
    """
    message = getattr(choice, "message", None)
    if message is None:
        raise UnexpectedBody(f"not a chat completion: a choice without a message: "
                             f"{str(choice)[:200]!r}")
    content = getattr(message, "content", None)
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "".join(str(p.get("text") or "") for p in content if p.get("type") == "text")
    raise UnexpectedBody(f"not a chat completion: the message content is a "
                         f"{type(content).__name__}, not text")


def _token_count(value: Any) -> int:
    """A token count as the server reported it; 0 for one it did not report or that is
    no count (text, negative, not finite): the SDK does not check ``usage``, and a
    server's nonsense must not crash the run or lower its spend. ``raw`` keeps what
    the server sent."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(0, int(value))


def to_completion(response: Any, schema: dict[str, Any] | None, model: str,
                  scrub: Callable[[str], str] = scrub_text) -> Completion:
    """The SDK's response as a :class:`Completion` (``latency`` and ``attempts`` are
    filled by the caller), stored once and capped (see the module docstring).

    Args:
        response: What the SDK returned.
        schema: The request's schema (None: ``parsed`` stays None).
        model: The model asked for (when the response names none).
        scrub: Masks secrets in the reply's text and ``raw``.

    Raises:
        UnexpectedBody: The SDK handed back something that is not a chat completion
            (the text of a non-JSON body).
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        raise UnexpectedBody(f"not a chat completion: {str(response)[:2_000]!r}")
    text = capped_reply(_reply_text(choices[0]) if choices else "", scrub)
    usage = response.usage
    return Completion(
        text=text,
        parsed=parse_json_reply(text) if schema is not None else None,
        usage=Usage(
            prompt_tokens=_token_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_token_count(getattr(usage, "completion_tokens", 0)),
        ),
        latency=0.0,
        raw=_raw(response, scrub),
        model=cut_scrubbed(str(response.model or model), 200, scrub),
    )
