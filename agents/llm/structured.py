"""The one structured-call loop: ask, validate, explain the error, retry (bounded), fall back.

Team members (:class:`~orgteams.agents.llm.llm_agent.LLMAgent`), the Critic, the
Coordinator and the behaviour classifier all ask a chat model for one JSON object
through :func:`astructured_call` (or its sync wrapper :func:`structured_call`):

1. ask the backend, with the JSON schema the reply must follow;
2. read the JSON object (:func:`~orgteams.agents.backends.base.read_json_reply`: an
   object nested in a broken reply is never taken for the whole; raw control
   characters in strings, which llama.cpp's grammar lets through, are read and noted
   in the record's ``repaired``) and validate it with ``parse`` (for a pydantic model:
   :func:`pydantic_parser`), which raises
   :class:`~orgteams.agents.llm.schemas.ReplyError` with text written for the model to
   read (a reply the server cut at its token limit says so);
3. on an invalid reply, send that text back in the caller's correction message and
   ask again, at most ``max_retries`` more times;
4. after that, or when the backend fails
   (:class:`~orgteams.agents.backends.BackendError`), return None: the caller takes
   its declared fallback.

Every call fills one :class:`~orgteams.agents.records.StepRecord` (attempts, tokens,
cache hits, latency, validation errors, fallback). Nothing raises for a model's
mistakes or a failed server; configuration errors and our own bugs do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from orgteams.agents.backends.base import (
    BackendError,
    ChatBackend,
    ChatMessage,
    Completion,
    read_json_reply,
)
from orgteams.agents.llm.schemas import ReplyError, explain
from orgteams.agents.records import StepRecord

__all__ = ["astructured_call", "pydantic_parser", "structured_call"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
R = TypeVar("R", bound=StepRecord)


def pydantic_parser(model: type[M], check: Callable[[M], T] | None = None
                    ) -> Callable[[Any], T | M]:
    """A ``parse`` for :func:`astructured_call`: a JSON object validated by ``model``,
    then by ``check`` (which may raise :class:`ReplyError` too) when given."""

    def parse(parsed: Any) -> T | M:
        if not isinstance(parsed, dict):
            raise ReplyError("it is not a JSON object")
        try:
            value = model.model_validate(parsed)
        except ValidationError as exc:
            raise ReplyError(explain(exc)) from None
        return check(value) if check is not None else value

    return parse


async def astructured_call(
    backend: ChatBackend,
    prompt: list[ChatMessage],
    *,
    schema: dict[str, Any],
    parse: Callable[[Any], T],
    correction: Callable[[str], str],
    record: R | None = None,
    max_retries: int = 1,
    temperature: float = 0.0,
    max_tokens: int = 256,
    seed: int | None = None,
) -> tuple[T | None, R | StepRecord]:
    """Ask for one JSON object; validate, explain, retry, fall back.

    Args:
        backend: The chat model.
        prompt: The first request's messages.
        schema: The JSON schema sent with every attempt.
        parse: The reply's JSON object (None when the text held none) -> the value;
            raises :class:`ReplyError` for an invalid reply.
        correction: The error text -> the user message asking for a corrected reply.
        record: The record to fill (e.g. a
            :class:`~orgteams.agents.records.DecisionRecord`); default: a new one.
        max_retries: Extra attempts after an invalid reply.
        temperature, max_tokens, seed: Passed to every attempt.

    Returns:
        ``(value, record)``; value None means: take the declared fallback
        (``record.fallback`` says why).

    Raises:
        ValueError: ``max_retries`` < 0.
        BackendConfigError: The backend is misconfigured (never swallowed).
    """
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    step = record if record is not None else StepRecord(model=backend.model)
    step.prompt = list(prompt)
    conversation = list(prompt)
    for attempt in range(max_retries + 1):
        try:
            completion = await backend.acomplete(conversation, schema=schema,
                                                 temperature=temperature,
                                                 max_tokens=max_tokens, seed=seed)
        except BackendError as exc:
            step.attempts += exc.attempts
            step.error = f"{exc.kind}: {exc.reason}"
            step.fallback = f"backend error ({step.error})"
            return None, step
        step.add(completion)
        read, repaired = read_json_reply(completion.text)
        parsed = read if completion.parsed is None else completion.parsed
        if completion.parsed is not None and completion.parsed != read:
            repaired = []  # the backend read the text its own way
        try:
            value = parse(parsed)
        except ReplyError as exc:
            reason = f"{exc}{_cut_note(completion)}" if parsed is None else str(exc)
            step.errors.append(reason)
            if attempt < max_retries:
                step.retries += 1
                conversation += [{"role": "assistant", "content": completion.text},
                                 {"role": "user", "content": correction(reason)}]
            continue
        step.parsed = parsed
        step.repaired += repaired
        return value, step
    step.fallback = f"invalid reply after {max_retries + 1} attempt(s): {step.errors[-1]}"
    return None, step


def _cut_note(completion: Completion) -> str:
    """Why a reply holds no JSON object, when the server says generation hit its token
    limit (the backend may cap ``max_tokens`` below what was asked)."""
    choices = (completion.raw or {}).get("choices") or [{}]
    if isinstance(choices[0], dict) and choices[0].get("finish_reason") == "length":
        return (f" (the reply was cut at the token limit after "
                f"{completion.usage.completion_tokens} tokens, before the object closed: "
                "answer shorter)")
    return ""


def structured_call(backend: ChatBackend, prompt: list[ChatMessage], **kwargs: Any
                    ) -> tuple[Any, StepRecord]:
    """:func:`astructured_call` from synchronous code (same arguments and result).

    It runs its own event loop and closes the backend's async client bound to it
    before the loop ends.

    Raises:
        RuntimeError: Called while an event loop runs (await
            :func:`astructured_call` there instead).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("structured_call was called inside a running event loop; "
                           "await astructured_call(...) instead")

    async def call() -> tuple[Any, StepRecord]:
        try:
            return await astructured_call(backend, prompt, **kwargs)
        finally:
            await backend.aclose()

    return asyncio.run(call())
