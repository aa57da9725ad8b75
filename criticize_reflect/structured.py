"""One structured LLM call: ask, validate with pydantic, correct, retry (bounded), fall back.

The Critic and the Coordinator both ask a chat model for one JSON object. A reply that
is not JSON, or whose fields do not validate, is the model's fault: the model gets the
shipped ``correction.j2`` message (the error, an example, a hint) and at most
``max_retries`` more attempts. After that, or when the backend fails
(:class:`~orgteams.agents.backends.BackendError`), the caller gets ``value=None`` and a
recorded ``fallback`` reason; nothing raises (configuration errors excepted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from orgteams.agents.backends.base import (
    Attempt,
    BackendError,
    ChatBackend,
    Message,
    parse_json_reply,
)

T = TypeVar("T")

__all__ = ["CallRecord", "ReplyInvalid", "explain", "structured_call"]


class ReplyInvalid(ValueError):
    """A reply is invalid; the text is shown to the model in the correction message."""


@dataclass
class CallRecord:
    """What happened during one structured call (saved beside its result).

    Attributes:
        attempts: Backend calls made.
        errors: Why each rejected reply was rejected.
        fallback: Why the caller fell back (None when a reply was accepted).
        prompt_tokens / completion_tokens: Summed usage of all attempts.
        replies: Raw reply texts, in order.
        requests: Every HTTP request made, failed and retried ones included.
    """

    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    fallback: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: list[str] = field(default_factory=list)
    requests: list[Attempt] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain(exc: ValidationError) -> str:
    """Pydantic errors as ``field 'a.b': message`` lines joined by ``; ``."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "reply"
        parts.append(f"field {where!r}: {err['msg']}")
    return "; ".join(parts)


def structured_call(
    backend: ChatBackend,
    messages: list[Message],
    model: type[BaseModel],
    *,
    check: Callable[[BaseModel], T] | None = None,
    example: dict[str, Any],
    hint: str,
    max_retries: int = 1,
    max_tokens: int = 1024,
    temperature: float = 0.0,
    seed: int | None = None,
) -> tuple[T | None, CallRecord]:
    """Ask for one JSON object matching ``model``; validate, correct, retry, fall back.

    Args:
        backend: The chat model.
        messages: The prompt (system + user).
        model: The pydantic reply model; its JSON schema is sent to the backend.
        check: Further validation of the parsed model, returning the final value;
            raises :class:`ReplyInvalid` to ask for a correction. Default: the model.
        example: A valid example object (shown in corrections).
        hint: The rule that most often goes wrong (shown in corrections).
        max_retries: Extra attempts after an invalid reply.

    Returns:
        ``(value or None, record)``; None means: use the declared fallback.
    """
    from orgteams.agents.prompts import default_templates

    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    record = CallRecord()
    conversation = list(messages)
    schema = model.model_json_schema()
    for attempt in range(max_retries + 1):
        try:
            completion = backend.complete(conversation, schema=schema, temperature=temperature,
                                          max_tokens=max_tokens, seed=seed)
        except BackendError as exc:
            record.requests += exc.attempts
            record.errors.append(f"{exc.kind}: {exc.reason}")
            record.fallback = f"backend error ({exc.kind}: {exc.reason})"
            return None, record
        record.attempts += 1
        record.requests += completion.attempts
        record.prompt_tokens += completion.usage.prompt_tokens
        record.completion_tokens += completion.usage.completion_tokens
        record.replies.append(completion.text)
        parsed = completion.parsed if completion.parsed is not None else parse_json_reply(
            completion.text)
        try:
            if not isinstance(parsed, dict):
                raise ReplyInvalid("it is not a JSON object")
            try:
                value = model.model_validate(parsed)
            except ValidationError as exc:
                raise ReplyInvalid(explain(exc)) from None
            return (check(value) if check else value), record  # type: ignore[return-value]
        except ReplyInvalid as exc:
            record.errors.append(str(exc))
            if attempt < max_retries:
                correction = default_templates().render(
                    "correction", error=str(exc), example=example, hint=hint)
                conversation += [{"role": "assistant", "content": completion.text},
                                 {"role": "user", "content": correction}]
    record.fallback = f"invalid reply after {max_retries + 1} attempt(s): {record.errors[-1]}"
    return None, record
