"""Any OpenAI-compatible chat server (OpenAI, vLLM, llama.cpp, Ollama) via the ``openai`` SDK.

Structured output (``schema=``) has three wire modes, because servers disagree:

* ``"json_schema"``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM).
* ``"json_object"``: ``{"type": "json_object", "schema": ...}``, which llama.cpp's
  servers turn into a grammar (llama-cpp-python 0.3.x answers HTTP 500 to json_schema).
* ``"prompt"``: no ``response_format``; the schema goes into a system instruction.

``structured="auto"`` tries them in that order until one works, on HTTP 400, 422 or
500, and then keeps the mode that worked for the life of the backend. Once a mode has
worked, an error is an error. Retries with backoff on 429, 5xx, timeouts and
connection errors are the SDK's own (``max_retries``, ``timeout``).

The API key is held privately: it never appears in ``repr``, error messages,
completions or anything else this module returns.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any

from orgteams.agents.backends.base import (
    BackendConfigError,
    BackendError,
    ChatBackend,
    ChatMessage,
    Completion,
    Usage,
    parse_json_reply,
)
from orgteams.agents.backends.redact import scrub_text, scrub_url
from orgteams.envs.errors import MissingExtraError

__all__ = ["MODES", "OpenAIBackend"]

MODES = ("json_schema", "json_object", "prompt")
_FALLBACK_STATUS = (400, 422, 500)
_SERVER_FAULT_STATUS = (408, 409, 429)
_NO_KEY = "sk-no-key-required"

_INSTRUCTION = (
    "Reply with exactly one JSON object that follows this JSON schema, and nothing else "
    "(no prose, no code fence):\n{schema}"
)


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _schema_name(schema: dict[str, Any]) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title", "reply")))[:64] or "reply"


def _error_detail(exc: Any) -> str:
    """The server's own error message, without the SDK's "Error code: N - " prefix."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)
    if isinstance(body, str) and body:
        return body
    return str(getattr(exc, "message", "") or exc)


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise MissingExtraError(
            'The openai backend needs the "llm" extra: pip install "orgteams[llm]"'
        ) from exc
    return openai


class OpenAIBackend(ChatBackend):
    """Chat completions from an OpenAI-compatible server.

    Args:
        model: Model name; default ``$ORGTEAMS_MODEL``.
        base_url: Server URL ending in ``/v1``; default ``$ORGTEAMS_BASE_URL``, then
            ``$OPENAI_BASE_URL``, then OpenAI's.
        api_key: Default ``$ORGTEAMS_API_KEY``, then ``$OPENAI_API_KEY``. Optional
            when ``base_url`` is set (local servers need none).
        timeout: Seconds per HTTP attempt.
        max_retries: SDK retries (with backoff) on 429, 5xx, timeout, connection error.
        structured: ``"auto"`` or one of :data:`MODES` (see the module docstring).

    Raises:
        BackendConfigError: No model, no key for OpenAI's own server, bad ``structured``.
    """

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        structured: str = "auto",
    ) -> None:
        openai = _import_openai()
        if structured != "auto" and structured not in MODES:
            raise BackendConfigError(
                f"structured must be 'auto' or one of {', '.join(MODES)}; got {structured!r}"
            )
        model = model or _env("ORGTEAMS_MODEL")
        if not model:
            raise BackendConfigError(
                "No model name: pass model=... or set ORGTEAMS_MODEL (e.g. gpt-4o-mini)"
            )
        base_url = base_url or _env("ORGTEAMS_BASE_URL", "OPENAI_BASE_URL")
        key = api_key or _env("ORGTEAMS_API_KEY", "OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise BackendConfigError(
                    "No API key for api.openai.com: set ORGTEAMS_API_KEY or OPENAI_API_KEY, "
                    "or pass base_url=... for a server that needs no key"
                )
            key = _NO_KEY
        self.model = model
        # What we show and record has no credentials; the clients get the real URL.
        self.base_url = scrub_url(base_url)
        self.__url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.structured = structured
        self._mode = MODES[0] if structured == "auto" else structured
        self._mode_confirmed = structured != "auto"
        self.__key = key
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
        self._aclient: Any = None
        self._aloop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key='***', structured={self.structured!r}, mode={self.mode!r})"
        )

    @property
    def mode(self) -> str:
        """The structured-output mode in use (settled after the first schema call)."""
        return self._mode

    def _scrub(self, text: str) -> str:
        """``text`` without the key, the URL's credentials or key-like strings."""
        if self.__key:
            text = text.replace(self.__key, "***")
        if self.__url and self.base_url:
            text = text.replace(self.__url, self.base_url)
        return scrub_text(text)

    def _request(
        self,
        mode: str,
        messages: list[ChatMessage],
        schema: dict[str, Any] | None,
        temperature: float,
        max_tokens: int,
        seed: int | None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
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

    def _to_completion(
        self, response: Any, schema: dict[str, Any] | None, started: float
    ) -> Completion:
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = response.usage
        return Completion(
            text=text,
            parsed=parse_json_reply(text) if schema is not None else None,
            usage=Usage(
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            ),
            latency=time.perf_counter() - started,
            raw=response.model_dump(mode="json"),
            model=response.model or self.model,
        )

    def _convert_error(self, exc: Exception) -> Exception:
        """Map an SDK exception to BackendError / BackendConfigError, key scrubbed."""
        openai = _import_openai()
        if isinstance(exc, openai.APITimeoutError):
            return BackendError(
                f"timeout after {self.timeout}s x {self.max_retries + 1} attempts", kind="timeout"
            )
        if isinstance(exc, openai.APIConnectionError):
            return BackendError(
                self._scrub(f"connection failed to {self.base_url or 'api.openai.com'}"),
                kind="connection",
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = self._scrub(_error_detail(exc))[:300]
            if status >= 500 or status in _SERVER_FAULT_STATUS:
                return BackendError(f"HTTP {status}: {detail}", status=status)
            return BackendConfigError(f"HTTP {status} from {self.model!r}: {detail}")
        return exc

    def _modes_to_try(self, schema: dict[str, Any] | None) -> list[str]:
        if schema is None or self._mode_confirmed:
            return [self._mode]
        return list(MODES[MODES.index(self._mode) :])

    @staticmethod
    def _should_fall_back(exc: Exception, mode: str, modes: list[str]) -> bool:
        """True when an unsettled ``auto`` mode was rejected and another mode is left."""
        status = getattr(exc, "status_code", None)
        return status in _FALLBACK_STATUS and mode != modes[-1]

    def _settle(self, mode: str, schema: dict[str, Any] | None) -> None:
        if schema is not None and not self._mode_confirmed:
            self._mode = mode
            self._mode_confirmed = True

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """One chat completion (see :meth:`ChatBackend.complete`)."""
        openai = _import_openai()
        modes = self._modes_to_try(schema)
        for mode in modes:
            started = time.perf_counter()
            kwargs = self._request(mode, messages, schema, temperature, max_tokens, seed)
            try:
                response = self._client.chat.completions.create(**kwargs)
            except openai.OpenAIError as exc:
                if self._should_fall_back(exc, mode, modes):
                    continue
                raise self._convert_error(exc) from None
            self._settle(mode, schema)
            return self._to_completion(response, schema, started)
        raise RuntimeError("unreachable: the last mode never falls back")

    def _async_client(self) -> Any:
        # An AsyncOpenAI client's connection pool belongs to one event loop.
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            self._aclient = _import_openai().AsyncOpenAI(
                api_key=self.__key,
                base_url=self.__url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
            self._aloop = loop
        return self._aclient

    async def acomplete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """Async :meth:`complete` with the SDK's ``AsyncOpenAI`` client."""
        openai = _import_openai()
        client = self._async_client()
        modes = self._modes_to_try(schema)
        for mode in modes:
            started = time.perf_counter()
            kwargs = self._request(mode, messages, schema, temperature, max_tokens, seed)
            try:
                response = await client.chat.completions.create(**kwargs)
            except openai.OpenAIError as exc:
                if self._should_fall_back(exc, mode, modes):
                    continue
                raise self._convert_error(exc) from None
            self._settle(mode, schema)
            return self._to_completion(response, schema, started)
        raise RuntimeError("unreachable: the last mode never falls back")

    async def aclose(self) -> None:
        """Close the async client while its event loop still runs (no 'loop is closed')."""
        if self._aclient is not None and self._aloop is asyncio.get_running_loop():
            await self._aclient.close()
            self._aclient = None

    def close(self) -> None:
        """Close the HTTP clients."""
        self._client.close()
        self._aclient = None
