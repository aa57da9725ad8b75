"""Any OpenAI-compatible chat server (OpenAI, vLLM, llama.cpp, Ollama) via the ``openai`` SDK.

Structured output (``schema=``) has three wire modes, because servers disagree:

* ``"json_schema"``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM).
* ``"json_object"``: ``{"type": "json_object", "schema": ...}``, which llama.cpp's
  servers turn into a grammar (llama-cpp-python 0.3.x answers json_schema with HTTP
  500 ``response_format.type: Input should be 'text' or 'json_object'``).
* ``"prompt"``: no ``response_format``; the schema goes into a system instruction.

``structured="auto"`` starts with ``json_schema`` and moves down that list only when
the server says the mode is not supported: HTTP 400, 415, 422, 500 or 501 whose error
message names ``response_format``, ``json_schema`` or ``json_object``. Any other error
(a transient 500, a timeout) never changes the mode. Each downgrade is recorded on the
request that caused it (:attr:`Attempt.downgrade`) and in
:attr:`OpenAIBackend.downgrades`; the mode that worked is kept for the life of the
backend, and once a mode has worked an error is an error.

Retry policy (ours, not the SDK's: the client is built with ``max_retries=0`` and
`tenacity <https://tenacity.readthedocs.io>`_ drives the retries, so every request is
an :class:`~orgteams.agents.backends.base.Attempt` in the reply or in the error):

* Retried, up to ``max_retries`` more requests: timeouts, connection errors (refused,
  dropped), protocol errors (a truncated or non-JSON body, a reply that is not a chat
  completion), HTTP 408, 409, 429 and 5xx other than "mode not supported".
* The wait before a retry is the server's ``Retry-After`` (``retry-after-ms`` or
  ``retry-after`` seconds, up to 60 s) when it sends one, else exponential backoff
  with full jitter: a random time up to ``min(max_backoff, backoff * 2 ** n)``.
* Never retried: other 4xx (:class:`BackendConfigError`: our request or key is wrong)
  and "mode not supported" (a downgrade in ``auto`` mode, else a config error).

The wire format of each mode (requests, replies) is :mod:`.openai_wire`.

Deadline: ``timeout`` bounds each request as a whole (connect, headers and body), not
each read, so a server that trickles its reply a byte at a time is cut off there too.
Requests run on an asyncio client, where a request past its deadline is cancelled and
its connection closed; :meth:`OpenAIBackend.complete` runs one on a private event loop.
A call takes at most ``(max_retries + 1) * timeout`` plus the waits between retries.

Defaults: ``timeout`` 30 s per request, ``max_retries`` 2 (at most 10,
:data:`MAX_RETRIES`); ``$ORGTEAMS_TIMEOUT`` and ``$ORGTEAMS_MAX_RETRIES`` set them for
backends built from a spec string.

Secrets: the API key and a base URL's ``user:password`` are held privately; the URL's
credentials are sent as HTTP Basic auth in place of the key (a header we know and
mask), never left in the URL for the HTTP library to encode. Every form of them (as
written, URL-decoded, base64) and every credential shape
(:func:`~orgteams.agents.backends.redact.scrub_text`) is masked in ``repr``, error
messages and replies (text and ``raw``), so nothing this module returns holds one.
"""

from __future__ import annotations

import asyncio
import base64
import math
import os
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

from orgteams.agents.backends import retry
from orgteams.agents.backends.base import (
    Attempt,
    BackendConfigError,
    BackendError,
    ChatBackend,
    ChatMessage,
    Completion,
)
from orgteams.agents.backends.openai_wire import MODES, request_kwargs, to_completion
from orgteams.agents.backends.redact import Secrets, scrub_url, url_credentials
from orgteams.agents.backends.retry import DeadlineExceeded, UnexpectedBody, Unsupported
from orgteams.errors import MissingExtraError

__all__ = ["MAX_BODY_BYTES", "MODES", "OpenAIBackend"]

_NO_KEY = "sk-no-key-required"
T = TypeVar("T")


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


MAX_RETRIES = 10
"""Most retries of one request (``max_retries``, ``$ORGTEAMS_MAX_RETRIES``): past it a
dead server held each model call for hours (11 requests of 30 s are already 5.5 min)
where the agent should take its recorded fallback."""


def _env_number(name: str, default: float, kind: type) -> Any:
    """``$name`` as a float of seconds above 0 (``kind`` float) or a whole number from 0
    to :data:`MAX_RETRIES` (``kind`` int); a bad value is one line naming the variable."""
    raw = os.environ.get(name)
    if not raw:
        return default
    wanted = "a number of seconds > 0" if kind is float \
        else f"a whole number from 0 to {MAX_RETRIES}"
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or (value <= 0 or not math.isfinite(value) if kind is float
                         else not 0 <= value <= MAX_RETRIES):
        raise BackendConfigError(f"${name} must be {wanted}, got {raw!r}")
    return value


def _checked_url(url: str | None, names: tuple[str, ...]) -> str | None:
    """``url`` when it is an http(s) URL with a host (and a port, if any, that is one);
    the SDK failed each request on anything else ('notaurl', 'ftp://...': "connection
    failed" after every retry), or raised its own traceback ('http://[::1')."""
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        ok = False
    if not ok:
        where = next((f"${n}" for n in names if os.environ.get(n) == url), "base_url")
        raise BackendConfigError(f"{where} must be an http(s) URL such as "
                                 f"http://localhost:8000/v1, got {scrub_url(url)!r}")
    return url


MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest HTTP response body read from a server (32 MiB, over 300 times the largest
reply we keep); past it the request fails as ``protocol``."""


def _capped_http_client(openai: Any) -> Any:
    """An HTTP client for the SDK that reads at most :data:`MAX_BODY_BYTES` of a body and
    asks for it uncompressed, refusing a compressed one; None (the SDK's own client) when
    the SDK's HTTP module cannot be found.

    The SDK reads a whole body into memory before we see it: a 300 MB body took 1 GB,
    and a gzip bomb (1 MB on the wire, 1 GB unpacked) the same, at each of a team's calls
    in parallel.
    """
    import importlib

    base = importlib.import_module(f"{openai.__name__}._base_client")
    http = getattr(base, "httpx2", None) or getattr(base, "httpx", None)
    if http is None or not hasattr(openai, "DefaultAsyncHttpxClient"):
        return None

    class CappedStream(http.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def __aiter__(self) -> Any:
            size = 0
            async for chunk in self._inner:
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise UnexpectedBody(f"a body of more than {MAX_BODY_BYTES:,} bytes")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(http.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self._inner = http.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self._inner.handle_async_request(request)
            encoding = response.headers.get("content-encoding", "").strip().lower()
            if encoding not in ("", "identity"):
                await response.aclose()
                raise UnexpectedBody(f"a {encoding}-encoded body (we ask for identity: "
                                     "unpacked, it has no bound)")
            response.stream = CappedStream(response.stream)
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return openai.DefaultAsyncHttpxClient(transport=CappedTransport(),
                                          headers={"Accept-Encoding": "identity"})


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to the end on a new event loop (in a worker thread when this thread
    already runs one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as worker:
        return worker.submit(asyncio.run, coro).result()


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
            ``$OPENAI_BASE_URL``, then OpenAI's. Credentials in it
            (``http://user:password@host/v1``) are sent as HTTP Basic auth instead of
            the key.
        api_key: Default ``$ORGTEAMS_API_KEY``, then ``$OPENAI_API_KEY``. Optional
            when ``base_url`` is set (local servers need none).
        timeout: Deadline of each HTTP request in seconds, connect to last byte;
            default ``$ORGTEAMS_TIMEOUT``, else 30.
        max_retries: Requests after the first on a transient failure (see the module
            docstring), at most :data:`MAX_RETRIES`; default ``$ORGTEAMS_MAX_RETRIES``,
            else 2.
        structured: ``"auto"`` or one of :data:`MODES` (see the module docstring).
        backoff: Base seconds of the exponential backoff between retries.
        max_backoff: Longest backoff wait in seconds.

    Raises:
        BackendConfigError: No model, no key for OpenAI's own server, bad ``structured``,
            a negative timeout, retry count or backoff.
    """

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        structured: str = "auto",
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        openai = _import_openai()
        if structured != "auto" and structured not in MODES:
            raise BackendConfigError(
                f"structured must be 'auto' or one of {', '.join(MODES)}; got {structured!r}"
            )
        timeout = timeout if timeout is not None else _env_number("ORGTEAMS_TIMEOUT", 30.0, float)
        if max_retries is None:
            max_retries = _env_number("ORGTEAMS_MAX_RETRIES", 2, int)
        if not timeout > 0 or not 0 <= max_retries <= MAX_RETRIES \
                or not 0 <= backoff <= max_backoff:
            raise BackendConfigError(
                f"need timeout > 0, 0 <= max_retries <= {MAX_RETRIES} and "
                f"0 <= backoff <= max_backoff; got "
                f"timeout={timeout}, max_retries={max_retries}, backoff={backoff}, "
                f"max_backoff={max_backoff}"
            )
        model = model or _env("ORGTEAMS_MODEL")
        if not model:
            raise BackendConfigError(
                "No model name: pass model=... or set ORGTEAMS_MODEL (e.g. gpt-4o-mini)"
            )
        base_url = _checked_url(base_url or _env("ORGTEAMS_BASE_URL", "OPENAI_BASE_URL"),
                                ("ORGTEAMS_BASE_URL", "OPENAI_BASE_URL"))
        key = api_key or _env("ORGTEAMS_API_KEY", "OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise BackendConfigError(
                    "No API key for api.openai.com: set ORGTEAMS_API_KEY or OPENAI_API_KEY, "
                    "or pass base_url=... for a server that needs no key"
                )
            key = _NO_KEY
        self.model = model
        # What we show and record has no credentials; the clients get the URL without
        # them, and them as a header whose every form _scrub masks.
        self.base_url = scrub_url(base_url)
        self.__url, user, password = url_credentials(base_url)
        self.__headers: dict[str, str] = {}
        pairs: tuple[tuple[str, str], ...] = ()
        if user is not None or password is not None:
            pairs = ((user or "", password or ""),)
            token = base64.b64encode(f"{user or ''}:{password or ''}".encode()).decode()
            self.__headers["Authorization"] = f"Basic {token}"
        self.__secrets = Secrets(key, password, pairs=pairs)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.structured = structured
        self.downgrades: list[dict[str, Any]] = []
        """Every structured-mode downgrade: ``{"from", "to", "status", "detail"}``."""
        self._mode = MODES[0] if structured == "auto" else structured
        self._mode_confirmed = structured != "auto"
        self.__key = key
        self._openai = openai
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
        """``text`` without the key, the URL's credentials (any form) or key-like strings."""
        return self.__secrets.scrub(text)

    def _new_client(self) -> Any:
        """A new ``AsyncOpenAI`` client for this backend's server."""
        # max_retries=0: the SDK must not retry behind our back (see the module docstring).
        return self._openai.AsyncOpenAI(api_key=self.__key, base_url=self.__url,
                                        timeout=self.timeout, max_retries=0,
                                        default_headers=self.__headers or None,
                                        http_client=_capped_http_client(self._openai))

    def _request(
        self,
        mode: str,
        messages: list[ChatMessage],
        schema: dict[str, Any] | None,
        temperature: float,
        max_tokens: int,
        seed: int | None,
    ) -> dict[str, Any]:
        return request_kwargs(self.model, mode, messages, schema, temperature, max_tokens, seed)

    def _to_completion(self, response: Any, schema: dict[str, Any] | None) -> Completion:
        return to_completion(response, schema, self.model, self._scrub)

    def _failed(self, exc: Exception, label: str, kwargs: dict[str, Any], started: float,
                attempts: list[Attempt]) -> Exception:
        """Record the failed request; the exception to raise (``exc`` if not a fault)."""
        attempt, error = retry.classify(
            exc, label=label, has_format="response_format" in kwargs,
            latency=time.perf_counter() - started, timeout=self.timeout,
            number=len(attempts) + 1, where=self.base_url or "api.openai.com",
            model=self.model, scrub=self._scrub)
        if attempt is not None:
            attempts.append(attempt)
        return error

    def _policy(self) -> Any:
        return retry.policy(max_retries=self.max_retries, backoff=self.backoff,
                            max_backoff=self.max_backoff)

    def _modes_to_try(self, schema: dict[str, Any] | None) -> list[str]:
        if schema is None or self._mode_confirmed:
            return [self._mode]
        return list(MODES[MODES.index(self._mode) :])

    def _downgrade(self, mode: str, exc: Unsupported, attempts: list[Attempt]) -> bool:
        """Move an unsettled ``auto`` backend to the next mode; False when none is left."""
        if self.structured != "auto" or self._mode_confirmed or mode == MODES[-1]:
            return False
        nxt = MODES[MODES.index(mode) + 1]
        attempts[-1] = replace(attempts[-1], downgrade=nxt)
        self.downgrades.append({"from": mode, "to": nxt, "status": exc.status,
                                "detail": exc.detail})
        self._mode = nxt
        return True

    def _not_supported(self, mode: str, exc: Unsupported, attempts: list[Attempt]
                       ) -> Exception:
        if self.structured != "auto":
            return BackendConfigError(
                f"HTTP {exc.status} from {self.model!r}: structured={mode!r} is not supported "
                f"by this server ({exc.detail}); use structured='auto'"
            )
        return BackendError(f"HTTP {exc.status}: {exc.detail}", status=exc.status,
                            attempts=attempts)

    def _finish(self, completion: Completion, mode: str, schema: dict[str, Any] | None,
                attempts: list[Attempt], started: float) -> Completion:
        if schema is not None and not self._mode_confirmed:
            self._mode = mode
            self._mode_confirmed = True
        completion.latency = time.perf_counter() - started
        completion.attempts = list(attempts)
        return completion

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """One chat completion (see :meth:`ChatBackend.complete`).

        Its requests run on a private event loop with a client of their own: only an
        async request can be abandoned at its deadline (a blocking read cannot).
        """

        async def call() -> Completion:
            client = self._new_client()
            try:
                return await self._complete(client, messages, schema, temperature,
                                            max_tokens, seed)
            finally:
                await client.close()

        return _run_sync(call())

    def _async_client(self) -> Any:
        # An AsyncOpenAI client's connection pool belongs to one event loop.
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            self._aclient = self._new_client()
            self._aloop = loop
        return self._aclient

    async def _asend(self, client: Any, kwargs: dict[str, Any], label: str,
                     schema: dict[str, Any] | None, attempts: list[Attempt]) -> Completion:
        started = time.perf_counter()
        try:
            try:  # the deadline of the whole request: connect, headers, body
                response = await asyncio.wait_for(client.chat.completions.create(**kwargs),
                                                  self.timeout)
            except asyncio.TimeoutError:
                raise DeadlineExceeded(f"no complete reply within {self.timeout}s") from None
            completion = self._to_completion(response, schema)
        except Exception as exc:  # noqa: BLE001 - _failed re-raises what is not a server fault
            raise self._failed(exc, label, kwargs, started, attempts) from None
        attempts.append(Attempt(label, 200, latency=time.perf_counter() - started))
        return completion

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
        return await self._complete(self._async_client(), messages, schema, temperature,
                                    max_tokens, seed)

    async def _complete(self, client: Any, messages: list[ChatMessage],
                        schema: dict[str, Any] | None, temperature: float, max_tokens: int,
                        seed: int | None) -> Completion:
        attempts: list[Attempt] = []
        started = time.perf_counter()
        for mode in self._modes_to_try(schema):
            kwargs = self._request(mode, messages, schema, temperature, max_tokens, seed)
            label = mode if schema is not None else ""
            try:
                async for attempt in self._policy():
                    with attempt:
                        completion = await self._asend(client, kwargs, label, schema, attempts)
            except Unsupported as exc:
                if self._downgrade(mode, exc, attempts):
                    continue
                raise self._not_supported(mode, exc, attempts) from None
            except BackendError as exc:
                exc.attempts = list(attempts)
                raise
            return self._finish(completion, mode, schema, attempts, started)
        raise RuntimeError("unreachable: the last mode is never downgraded")

    async def aclose(self) -> None:
        """Close the async client while its event loop still runs (no 'loop is closed')."""
        if self._aclient is not None and self._aloop is asyncio.get_running_loop():
            await self._aclient.close()
            self._aclient = None

    def close(self) -> None:
        """Drop the async client (:meth:`aclose` closes it within its event loop)."""
        self._aclient = None
