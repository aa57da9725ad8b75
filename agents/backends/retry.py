"""How one OpenAI-compatible request fails, and our retry policy for it.

:func:`classify` turns whatever the ``openai`` SDK raised into an
:class:`~orgteams.agents.backends.base.Attempt` record plus the exception the caller
sees; :func:`policy` builds the `tenacity <https://tenacity.readthedocs.io>`_
controller that retries the transient ones (the policy is stated in
:mod:`orgteams.agents.backends.openai_backend`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from orgteams.agents.backends.base import Attempt, BackendConfigError, BackendError
from orgteams.agents.backends.redact import cut_scrubbed
from orgteams.errors import MissingExtraError

__all__ = ["MAX_DETAIL_CHARS", "MAX_RETRY_AFTER", "DeadlineExceeded", "UnexpectedBody",
           "Unsupported", "classify", "nap", "policy"]

UNSUPPORTED_STATUS = (400, 415, 422, 500, 501)
_UNSUPPORTED_TEXT = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
RETRY_STATUS = (408, 409, 429)
MAX_RETRY_AFTER = 60.0
"""Longest server-requested wait we honour (seconds); longer ones use our backoff."""
MAX_DETAIL_CHARS = 300
"""Longest server error text kept in a record (the start of the body, scrubbed)."""


class Unsupported(Exception):
    """The server rejected the structured-output mode (not retried)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class UnexpectedBody(Exception):
    """The body is not a chat completion (e.g. a proxy's HTML error page)."""


class DeadlineExceeded(TimeoutError):
    """A request got no complete reply (connect, headers and body) within its deadline."""


def error_detail(exc: Any) -> str:
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


def retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (an HTTP date is ignored)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name) if headers is not None else None
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if 0 <= value <= MAX_RETRY_AFTER:
            return value
    return None


def classify(exc: Exception, *, label: str, has_format: bool, latency: float, timeout: float,
             number: int, where: str, model: str, scrub: Callable[[str], str]
             ) -> tuple[Attempt | None, Exception]:
    """The record of a failed request and the exception to raise for it.

    Args:
        exc: What the SDK (or our reply check) raised.
        label: The request's structured mode (``""`` without a schema).
        has_format: The request carried a ``response_format``.
        latency: Seconds the request took.
        timeout, number, where, model: For messages (the per-request deadline, how many
            requests this call has made, the server URL, the model name).
        scrub: Masks the backend's secrets in a text (the server's text is cut to
            :data:`MAX_DETAIL_CHARS` as it is scrubbed: a huge error body costs nothing).

    Returns:
        ``(attempt, error)``: error is a :class:`BackendError` (transient: retried), a
        :class:`BackendConfigError`, an :class:`Unsupported`; or ``(None, exc)`` when
        ``exc`` is not a server fault (our own bug: it propagates unchanged).
    """
    import openai

    def record(kind: str, status: int | None, detail: str) -> Attempt:
        return Attempt(label, status, kind, type(exc).__name__, detail, latency)

    def cut(text: str) -> str:
        return cut_scrubbed(text, MAX_DETAIL_CHARS, scrub)

    if isinstance(exc, DeadlineExceeded | openai.APITimeoutError):
        return (record("timeout", None, f"no complete reply within {timeout}s"),
                BackendError(f"timeout after {timeout}s x {number} attempts", kind="timeout"))
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = cut(f"{type(cause).__name__}: {cause}" if cause else str(exc))
        # The SDK wraps its HTTP library's redirect limit as a connection error too; the
        # server answered, so "connection failed" sent people looking at the network.
        # By name: that library is httpx or httpx2, whichever the SDK's version imports.
        redirects = any(t.__name__ == "TooManyRedirects" for t in type(cause).__mro__)
        failed = (f"too many redirects from {where} (a 307/308 loop: check the base URL)"
                  if redirects else f"connection failed to {where}")
        return (record("connection", None, detail),
                BackendError(scrub(failed), kind="connection"))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = cut(error_detail(exc))
        if has_format and status in UNSUPPORTED_STATUS and _UNSUPPORTED_TEXT.search(detail):
            return record("unsupported", status, detail), Unsupported(status, detail)
        if status >= 500 or status in RETRY_STATUS:
            return (record("http", status, detail),
                    BackendError(f"HTTP {status}: {detail}", status=status,
                                 retry_after=retry_after(exc.response.headers)))
        return (record("config", status, detail),
                BackendConfigError(f"HTTP {status} from {model!r}: {detail}"))
    # A body nested past Python's recursion limit ('[' x 50,000) fails the SDK's JSON
    # decoding with a RecursionError: the server's fault, as a JSONDecodeError is.
    deep_body = isinstance(exc, RecursionError) and "decoding a JSON" in str(exc)
    if deep_body or isinstance(
            exc, json.JSONDecodeError | UnexpectedBody | openai.APIResponseValidationError):
        detail = cut(f"{type(exc).__name__}: {exc}")
        return (record("protocol", None, detail),
                BackendError(f"unreadable reply body ({detail})", kind="protocol"))
    return None, exc


async def nap(seconds: float) -> None:
    """The wait before a retry (a module function, so that tests can record the waits)."""
    await asyncio.sleep(seconds)


def policy(*, max_retries: int, backoff: float, max_backoff: float) -> Any:
    """A tenacity ``AsyncRetrying`` for one request: retry BackendError up to
    ``max_retries`` times, waiting the server's Retry-After or a jittered backoff."""
    try:
        import tenacity
    except ImportError:
        raise MissingExtraError('The openai backend needs the "llm" extra: '
                                'pip install "orgteams[llm]"') from None
    jitter = tenacity.wait_random_exponential(multiplier=backoff, max=max_backoff)

    def wait(state: Any) -> float:
        after = getattr(state.outcome.exception(), "retry_after", None)
        return after if after is not None else jitter(state)

    return tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(max_retries + 1), wait=wait,
        sleep=lambda seconds: nap(seconds),  # looked up at each wait (see nap)
        retry=tenacity.retry_if_exception_type(BackendError), reraise=True)
