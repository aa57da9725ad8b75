"""The chat-backend contract: messages in, a normalized :class:`Completion` out.

Every backend (OpenAI-compatible HTTP, the embedded local model, the scripted test
double, the disk cache) implements :class:`ChatBackend`. Control flow follows the
exception type:

* :class:`BackendError`: the model or server failed (timeout, HTTP 5xx or 429, a
  dropped connection, a truncated or non-JSON body) after the backend's bounded
  retries. Callers record it and fall back.
* :class:`BackendConfigError`: our configuration is wrong (no API key, bad key, unknown
  model, malformed request). It is raised to the user, never swallowed.
* A reply that does not parse is not an exception: ``Completion.parsed`` is None and
  the caller feeds back an error and retries (see DESIGN.md, "LLM backends").
"""

from __future__ import annotations

import asyncio
import json
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from orgteams.errors import UserError

ChatMessage = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

__all__ = [
    "Attempt",
    "BackendConfigError",
    "BackendError",
    "ChatBackend",
    "Completion",
    "ChatMessage",
    "TRANSPORT_KINDS",
    "Usage",
    "CONTROL_CHARACTERS_READ",
    "parse_json_reply",
    "read_json_reply",
]


@dataclass(frozen=True)
class Attempt:
    """One HTTP request made for a model call (a retry or a mode downgrade adds one).

    Attributes:
        mode: The structured-output mode of the request (``""`` without a schema).
        status: The HTTP status received, or None when no response came (timeout,
            dropped connection).
        kind: None for a usable reply, else the failure: ``"timeout"``,
            ``"connection"``, ``"protocol"`` (truncated or non-JSON body), ``"http"``
            (5xx, 429, 408, 409), ``"unsupported"`` (the server rejected the mode) or
            ``"config"`` (any other 4xx).
        error: The exception class, e.g. ``"APITimeoutError"``, ``"JSONDecodeError"``.
        detail: Short message (the server's own error text when there is one).
        latency: Seconds this request took.
        downgrade: The mode the backend switched to after this request, if it did.
    """

    mode: str
    status: int | None
    kind: str | None = None
    error: str | None = None
    detail: str = ""
    latency: float = 0.0
    downgrade: str | None = None

    @property
    def ok(self) -> bool:
        """True when this request got a usable reply."""
        return self.kind is None


TRANSPORT_KINDS = ("timeout", "connection", "protocol", "http", "scripted")
"""Failure kinds that mean the model could not be reached or did not answer usably."""


class BackendError(Exception):
    """The model server failed after bounded retries; record it and fall back.

    Attributes:
        reason: Short human-readable cause, e.g. ``"HTTP 500: boom"`` or ``"timeout"``.
        kind: One of :data:`TRANSPORT_KINDS`.
        status: The HTTP status for ``kind == "http"``, else None.
        attempts: Every request made for the failed call, oldest first.
        retry_after: Seconds the server asked us to wait (``Retry-After``), if any.
    """

    def __init__(self, reason: str, *, kind: str = "http", status: int | None = None,
                 attempts: list[Attempt] | None = None, retry_after: float | None = None
                 ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.status = status
        self.attempts: list[Attempt] = list(attempts or [])
        self.retry_after = retry_after


class BackendConfigError(UserError):
    """The backend is misconfigured (missing/bad key, unknown model, bad request)."""


@dataclass(frozen=True)
class Usage:
    """Tokens a backend reports for one or more calls; add them to sum."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass
class Completion:
    """One normalized model reply.

    Attributes:
        text: The assistant message text, exactly as returned.
        parsed: The JSON object in ``text`` when a schema was requested and the text
            holds one (see :func:`parse_json_reply`), else None. Not validated.
        usage: Tokens reported by the backend.
        latency: Wall-clock seconds of the call (0.0 for a cache hit).
        raw: The wire response as a dict, when there was one (for an OpenAI-compatible
            server: without the message text, which is ``text``, and capped; see
            :mod:`~orgteams.agents.backends.openai_wire`).
        cached: True when served from a :class:`~.cache.CachedBackend`.
        model: The model that answered.
        attempts: The HTTP requests made for this reply, failed ones included (empty
            for backends without HTTP and for cache hits).
    """

    text: str
    parsed: dict[str, Any] | None
    usage: Usage
    latency: float
    raw: dict[str, Any] | None
    cached: bool = False
    model: str = ""
    attempts: list[Attempt] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (inverse of :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        """Rebuild a completion written by :meth:`to_dict`."""
        attempts = [Attempt(**a) for a in data.get("attempts") or []]
        return cls(**{**data, "usage": Usage(**data["usage"]), "attempts": attempts})


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


CONTROL_CHARACTERS_READ = ("raw control characters (newlines, tabs) inside JSON strings "
                           "read as they are")
"""The note :func:`read_json_reply` gives when a reply is JSON only but for raw control
characters inside strings: llama-cpp-python's schema grammar allowed them (its ``char``
rule was ``[^"\\\\]``), and another server's grammar may, so a grammar-constrained reply
can hold them. The characters are kept, not removed (validators that want one line
still see them)."""


def read_json_reply(text: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Extract one JSON object from a model reply, with how it had to be read.

    Accepts a bare object, an object inside a Markdown code fence (```json ... ```),
    or an object with prose before or after it (the first ``{`` outside any earlier
    object that starts a valid object wins). An object nested in a broken one (a reply
    cut at ``max_tokens``, or with a syntax error) is never taken for the reply: that
    would read one inner part as the whole. Top-level arrays and scalars give None.

    Returns:
        ``(object or None, notes)``; ``notes`` is empty for strict JSON and
        ``[CONTROL_CHARACTERS_READ]`` when the object is JSON only but for raw control
        characters inside strings.
    """
    for strict in (True, False):
        value = _first_object(text, strict)
        if value is not None:
            return value, [] if strict else [CONTROL_CHARACTERS_READ]
    return None, []


def parse_json_reply(text: str) -> dict[str, Any] | None:
    """The JSON object of a model reply, or None (see :func:`read_json_reply`)."""
    return read_json_reply(text)[0]


def _first_object(text: str, strict: bool) -> dict[str, Any] | None:
    decoder = json.JSONDecoder(strict=strict)
    # RecursionError: JSON nested past Python's recursion limit ('[' x 50,000) is no
    # reply of ours, not a crash of the run
    for candidate in [text.strip()] + [m.strip() for m in _FENCE.findall(text)]:
        try:
            value = decoder.decode(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    for start in _outer_braces(text):
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _outer_braces(text: str) -> list[int]:
    """Positions of the ``{`` that open at depth 0 (braces inside JSON strings of an
    open object do not count; quotes in prose outside any object do not either)."""
    starts: list[int] = []
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                starts.append(i)
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
    return starts


class ChatBackend(ABC):
    """A chat model: ``complete(messages, schema=...) -> Completion``, sync and async.

    Subclasses set ``name`` (the backend kind) and ``model`` (the model answering),
    and implement :meth:`complete`. The default :meth:`acomplete` runs
    :meth:`complete` in a worker thread; backends with a native async client
    override it.
    """

    name: str = "base"
    model: str = ""

    @abstractmethod
    def complete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """Send one chat request and return the normalized reply.

        Args:
            messages: Chat messages, oldest first.
            schema: A JSON schema (e.g. ``Model.model_json_schema()``) the reply must
                follow; when given, ``Completion.parsed`` holds the parsed object.
            temperature: Sampling temperature; 0.0 for (near-)greedy decoding.
            max_tokens: Upper bound on completion tokens.
            seed: Sampling seed, where the server supports one.

        Raises:
            BackendError: The server failed after bounded retries.
            BackendConfigError: The backend is misconfigured.
        """

    async def acomplete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """Async :meth:`complete` (same arguments, same errors)."""
        return await asyncio.to_thread(
            self.complete,
            messages,
            schema=schema,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
        )

    def close(self) -> None:  # noqa: B027  (optional hook, default no-op)
        """Release clients, files or processes held by this backend."""

    async def aclose(self) -> None:  # noqa: B027  (optional hook, default no-op)
        """Release async clients bound to the running event loop (call before it ends)."""

    def __enter__(self) -> ChatBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
