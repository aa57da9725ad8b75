"""A SQLite disk cache in front of any backend: reruns are free and exact.

The key is the sha256 of the canonical JSON of (model, messages, schema,
temperature, seed, max_tokens). ``max_tokens`` is in the key because it can truncate
a reply. Only successful completions are stored; errors always reach the inner
backend again. The file survives restarts and can be shared by processes (WAL mode);
within a process one connection is shared behind a lock, so threads and asyncio
tasks may use one ``CachedBackend``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from os import PathLike
from pathlib import Path
from typing import Any

from orgteams.agents.backends.base import ChatBackend, ChatMessage, Completion
from orgteams.agents.backends.redact import (
    MAX_REPLY_CHARS,
    capped_reply,
    cut_scrubbed,
    scrub_value,
)

__all__ = ["CachedBackend", "cache_key"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, completion TEXT NOT NULL)"


def cache_key(
    model: str,
    messages: list[ChatMessage],
    schema: dict[str, Any] | None,
    temperature: float,
    seed: int | None,
    max_tokens: int,
) -> str:
    """The hex sha256 that identifies one request in the cache."""
    payload = {
        "model": model,
        "messages": messages,
        "schema": schema,
        "temperature": float(temperature),
        "seed": seed,
        "max_tokens": max_tokens,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CachedBackend(ChatBackend):
    """Wrap ``inner`` with a persistent cache at ``path``.

    Args:
        inner: The backend that answers cache misses.
        path: SQLite file; created with its parent folders when missing.

    Attributes:
        hits: Calls answered from the cache in this object's lifetime.
        misses: Calls forwarded to ``inner``.
    """

    def __init__(self, inner: ChatBackend, path: str | PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()

    @property
    def model(self) -> str:  # type: ignore[override]
        """The inner backend's model."""
        return self.inner.model

    @property
    def name(self) -> str:  # type: ignore[override]
        """``"cached:<inner name>"``."""
        return f"cached:{self.inner.name}"

    def __repr__(self) -> str:
        return f"CachedBackend({self.inner!r}, path={str(self.path)!r})"

    def _lookup(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT completion FROM completions WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        completion = Completion.from_dict(json.loads(row[0]))
        completion.cached = True
        completion.latency = 0.0
        completion.attempts = []  # a hit sends no request
        return completion

    def _store(self, key: str, completion: Completion) -> None:
        # A reply may echo a key (a server's error page, a model repeating its prompt):
        # the file keeps none (a rerun from the cache then sees the masked text). Its
        # text is capped as the OpenAI-compatible backends cap theirs, whatever the
        # backend (capping and scrubbing again what they return changes nothing).
        data = scrub_value(completion.to_dict(), lambda s: cut_scrubbed(s, MAX_REPLY_CHARS))
        data["text"] = capped_reply(completion.text)
        data = json.dumps(data, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO completions (key, completion) VALUES (?, ?)", (key, data)
            )
            self._conn.commit()

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> Completion:
        """Answer from the cache, or ask ``inner`` and store its reply."""
        key = cache_key(self.inner.model, messages, schema, temperature, seed, max_tokens)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        completion = self.inner.complete(
            messages, schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        self._store(key, completion)
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
        """Async :meth:`complete`; misses use ``inner.acomplete``."""
        key = cache_key(self.inner.model, messages, schema, temperature, seed, max_tokens)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        completion = await self.inner.acomplete(
            messages, schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        self._store(key, completion)
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()

    def close(self) -> None:
        """Close the SQLite connection and the inner backend."""
        with self._lock:
            self._conn.close()
        self.inner.close()
