"""Chat-model backends: one interface, several implementations (DESIGN.md, "LLM backends"),
the pool that owns them for an episode or a sweep worker (:class:`BackendPool`), and what
their calls cost (:mod:`.pricing`, :mod:`.spend`: a run's spend and budget).

Pick one with :func:`make_backend`::

    make_backend("scripted")                 # deterministic test double
    make_backend("local")                    # embedded SmolLM2 (needs orgteams[local])
    make_backend("openai:gpt-4o-mini")       # any OpenAI-compatible server
    make_backend({"backend": "openai", "model": "qwen2.5", "base_url": "http://h:8000/v1",
                  "cache": "runs/llm_cache.sqlite"})

Importing this package does not import ``openai`` or ``xllamacpp``.
"""

from __future__ import annotations

from typing import Any

from orgteams.agents.backends.base import (
    BackendConfigError,
    BackendError,
    ChatBackend,
    ChatMessage,
    Completion,
    Usage,
    parse_json_reply,
    read_json_reply,
)
from orgteams.agents.backends.cache import CachedBackend
from orgteams.agents.backends.local import LocalBackend, LocalServer, LocalServerError
from orgteams.agents.backends.openai_backend import OpenAIBackend
from orgteams.agents.backends.pool import BackendPool
from orgteams.agents.backends.pricing import cost, price_of
from orgteams.agents.backends.scripted import ScriptedBackend, ScriptExhaustedError
from orgteams.errors import UserError, unknown_name

__all__ = [
    "BACKENDS",
    "BackendConfigError",
    "BackendPool",
    "BackendError",
    "CachedBackend",
    "ChatBackend",
    "Completion",
    "LocalBackend",
    "LocalServer",
    "LocalServerError",
    "ChatMessage",
    "OpenAIBackend",
    "ScriptExhaustedError",
    "ScriptedBackend",
    "Usage",
    "cost",
    "make_backend",
    "parse_json_reply",
    "price_of",
    "read_json_reply",
]

BACKENDS: dict[str, type[ChatBackend]] = {
    "local": LocalBackend,
    "openai": OpenAIBackend,
    "scripted": ScriptedBackend,
}
"""Backend kinds by the name used in specs and configs."""


def make_backend(spec: str | dict[str, Any]) -> ChatBackend:
    """Build a backend from a short string or a config dict.

    Args:
        spec: ``"scripted"``, ``"local"``, ``"openai"`` (model from ``$ORGTEAMS_MODEL``)
            or ``"openai:<model>"``; or a dict with ``"backend"`` (one of those names)
            and the backend's keyword arguments, plus optional ``"cache"``: a SQLite
            path to wrap the backend in a :class:`CachedBackend`.

    Raises:
        ValueError: Unknown backend name (with a "Did you mean" hint).
        TypeError: ``spec`` is neither a str nor a dict.
    """
    if isinstance(spec, str):
        name, _, model = spec.partition(":")
        options: dict[str, Any] = {"model": model} if model else {}
    elif isinstance(spec, dict):
        options = dict(spec)
        if "backend" not in options:
            raise UserError(
                f"Backend spec needs a 'backend' key (one of {', '.join(sorted(BACKENDS))}); "
                f"got keys {sorted(options)}"
            )
        name = str(options.pop("backend"))
    else:
        raise TypeError(f"Backend spec must be a str or dict, got {type(spec).__name__}")
    if name not in BACKENDS:
        raise unknown_name("backend", name, BACKENDS)
    cache_path = options.pop("cache", None)
    backend = BACKENDS[name](**options)
    return CachedBackend(backend, cache_path) if cache_path else backend
