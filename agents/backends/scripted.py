"""A deterministic chat backend for tests and benchmarks; never used by default.

``ScriptedBackend`` answers from a list of canned replies, in order, or from a rule
function of ``(messages, schema)``. When the list runs out it raises
:class:`ScriptExhaustedError` (a test that makes more calls than it scripted is a
bug worth seeing), unless ``cycle=True``. A reply that is a :class:`BackendError`
instance is raised instead of returned, to test callers' fallbacks.

With no replies at all it answers every schema with the minimal valid object (first
enum value, empty string, zero...), which is enough to smoke-test a pipeline.
Usage is counted with a :class:`~orgteams.agents.llm.tokens.Tokenizer` (its owner's, else
the default one).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from orgteams.agents.backends.base import (
    BackendError,
    ChatBackend,
    ChatMessage,
    Completion,
    Usage,
    parse_json_reply,
)
from orgteams.agents.llm.tokens import Tokenizer, default_tokenizer

Reply = str | dict[str, Any] | BackendError
Rule = Callable[[list[ChatMessage], dict[str, Any] | None], "str | dict[str, Any]"]

__all__ = ["ScriptExhaustedError", "ScriptedBackend", "minimal_instance"]


class ScriptExhaustedError(RuntimeError):
    """A ScriptedBackend was called more times than it has replies."""


class ScriptedBackend(ChatBackend):
    """Canned replies (or a rule) with token counting and optional fake latency.

    Args:
        replies: Replies in call order (a str is the reply text, a dict is sent as
            its JSON text, a BackendError is raised), or a rule function
            ``(messages, schema) -> str | dict``. None: minimal valid objects.
        model: The model name reported in completions and used for prices.
        latency: Seconds to sleep per call (``asyncio.sleep`` in ``acomplete``).
        cycle: Start over at the first reply when the list runs out.
        tokenizer: Counts usage; default: :func:`~orgteams.agents.llm.tokens.default_tokenizer`
            (a :class:`~orgteams.agents.backends.pool.BackendPool` passes the one it owns).
    """

    name = "scripted"

    def __init__(
        self,
        replies: list[Reply] | Rule | None = None,
        model: str = "scripted",
        latency: float = 0.0,
        cycle: bool = False,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency}")
        if isinstance(replies, list | tuple) and cycle and not replies:
            raise ValueError("cycle=True needs at least one reply")
        self.model = model
        self.latency = latency
        self.cycle = cycle
        self.tokenizer = tokenizer
        self.calls: list[list[ChatMessage]] = []
        self._replies = replies
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ScriptedBackend(model={self.model!r}, calls={len(self.calls)})"

    def _next_reply(self, messages: list[ChatMessage], schema: dict[str, Any] | None) -> Reply:
        with self._lock:
            index = len(self.calls)
            self.calls.append(list(messages))
        if self._replies is None:
            return minimal_instance(schema) if schema is not None else "ok"
        if callable(self._replies):
            return self._replies(messages, schema)
        if index >= len(self._replies):
            if not self.cycle:
                raise ScriptExhaustedError(
                    f"ScriptedBackend has {len(self._replies)} replies but was called "
                    f"{index + 1} times; add replies or pass cycle=True"
                )
            index %= len(self._replies)
        return self._replies[index]

    def _finish(
        self,
        reply: Reply,
        messages: list[ChatMessage],
        schema: dict[str, Any] | None,
        started: float,
    ) -> Completion:
        if isinstance(reply, BackendError):
            raise reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        count = (self.tokenizer or default_tokenizer()).count
        usage = Usage(
            prompt_tokens=sum(count(m.get("content", "")) for m in messages),
            completion_tokens=count(text),
        )
        return Completion(
            text=text,
            parsed=parse_json_reply(text) if schema is not None else None,
            usage=usage,
            latency=time.perf_counter() - started,
            raw=None,
            model=self.model,
        )

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """Return the next scripted reply (see :class:`ChatBackend`)."""
        started = time.perf_counter()
        reply = self._next_reply(messages, schema)
        if self.latency:
            time.sleep(self.latency)
        return self._finish(reply, messages, schema, started)

    async def acomplete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """Async :meth:`complete`; the fake latency does not block the event loop."""
        started = time.perf_counter()
        reply = self._next_reply(messages, schema)
        if self.latency:
            await asyncio.sleep(self.latency)
        return self._finish(reply, messages, schema, started)


def minimal_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """The smallest value valid for a (pydantic-style) JSON schema.

    Follows local ``$ref``s, takes the first ``enum``/``anyOf`` option, fills every
    property. Enough for smoke tests; not a general schema sampler.
    """
    root = root if root is not None else schema
    if "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        return minimal_instance(node, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return minimal_instance(schema[key][0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props = schema.get("properties", {})
        return {name: minimal_instance(sub, root) for name, sub in props.items()}
    if kind == "array":
        count = schema.get("minItems", 0)
        return [minimal_instance(schema.get("items", {}), root) for _ in range(count)]
    return {"string": "", "integer": 0, "number": 0.0, "boolean": False}.get(kind)
