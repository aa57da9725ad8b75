"""The OpenAI chat-completions wire format: one request per structured-output mode, and
the reply normalized to a :class:`~orgteams.agents.backends.base.Completion`.

Which mode a server gets, retries and downgrades are
:class:`~orgteams.agents.backends.openai_backend.OpenAIBackend`'s job; this module
only translates.
"""

from __future__ import annotations

import json
import re
from typing import Any

from orgteams.agents.backends.base import ChatMessage, Completion, Usage, parse_json_reply
from orgteams.agents.backends.retry import UnexpectedBody

__all__ = ["MODES", "request_kwargs", "to_completion"]

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


def to_completion(response: Any, schema: dict[str, Any] | None, model: str) -> Completion:
    """The SDK's response as a :class:`Completion` (``latency`` and ``attempts`` are
    filled by the caller).

    Raises:
        UnexpectedBody: The SDK handed back something that is not a chat completion
            (the text of a non-JSON body).
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        raise UnexpectedBody(f"not a chat completion: {str(response)[:120]!r}")
    text = (choices[0].message.content or "") if choices else ""
    usage = response.usage
    return Completion(
        text=text,
        parsed=parse_json_reply(text) if schema is not None else None,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        ),
        latency=0.0,
        raw=response.model_dump(mode="json"),
        model=response.model or model,
    )
