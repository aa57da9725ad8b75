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
from orgteams.envs.core.user_files import make_parents
from orgteams.errors import UserError

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


def _unusable(path: Path, exc: Exception) -> UserError:
    # SQLite quotes a damaged row's bytes in its message: keep the line short and printable.
    why = "".join(c if c.isprintable() else "?" for c in " ".join(str(exc).split()))
    why = why if len(why) <= 200 else why[:200] + "..."
    return UserError(f"{path}: not a usable response cache ({why}); delete it or give "
                     "another --cache path")


def _open(path: Path) -> sqlite3.Connection:
    """A connection to the cache file at ``path`` (created, with its folders, when
    missing), checked: a file that is not a cache of ours, or a damaged one, is one
    line naming it instead of a ``sqlite3`` traceback at the first model call."""
    if path.is_dir():
        raise UserError(f"{path}: is a directory; --cache takes a file path (for example "
                        f"{path / 'cache.sqlite'})")
    make_parents(path, "the response cache")
    try:
        conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _unusable(path, exc) from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)
        # a bit flip in the pages or a truncated file passes the header check
        problem = conn.execute("PRAGMA quick_check").fetchone()[0]
        if problem != "ok":
            raise sqlite3.DatabaseError(f"integrity check: {problem}")
        conn.execute("SELECT key, completion FROM completions LIMIT 0")  # our columns
        conn.commit()
    except sqlite3.Error as exc:
        conn.close()
        raise _unusable(path, exc) from None
    return conn


def _completion(text: Any, path: Path, key: str) -> Completion:
    """The completion a cache row holds; a row that is not one is a UserError naming
    the file and the row (someone wrote it: our rows always read back)."""
    try:
        data = json.loads(text)
        completion = Completion.from_dict(data)
        if not isinstance(completion.text, str) or not isinstance(
                completion.parsed, dict | None):
            raise TypeError("'text' must be a string and 'parsed' an object or null")
        return completion
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise UserError(f"{path}: row {key[:16]}... is not a cached completion "
                        f"({type(exc).__name__}: {exc}); delete the file or give another "
                        "--cache path") from None


class CachedBackend(ChatBackend):
    """Wrap ``inner`` with a persistent cache at ``path``.

    Args:
        inner: The backend that answers cache misses.
        path: SQLite file; created with its parent folders when missing.

    Raises:
        UserError: ``path`` is a directory, or a file that is not a usable cache (not
            SQLite, truncated, damaged: ``PRAGMA quick_check``, about 0.05 s per 100 MB,
            or another table); later, a row that does not hold a completion.

    Attributes:
        hits: Calls answered from the cache in this object's lifetime.
        misses: Calls forwarded to ``inner``.
    """

    def __init__(self, inner: ChatBackend, path: str | PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn = _open(self.path)

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

    def _lookup(self, messages: list[ChatMessage], schema: dict[str, Any] | None,
                temperature: float, max_tokens: int, seed: int | None
                ) -> tuple[str, Completion | None]:
        """The request's cache key, and its cached completion or None (a miss)."""
        key = cache_key(self.inner.model, messages, schema, temperature, seed, max_tokens)
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT completion FROM completions WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.DatabaseError as exc:  # damaged after it opened
                raise _unusable(self.path, exc) from None
            if row is None:
                self.misses += 1
                return key, None
            self.hits += 1
        completion = _completion(row[0], self.path, key)
        completion.cached = True
        completion.latency = 0.0
        completion.attempts = []  # a hit sends no request
        return key, completion

    def _store(self, key: str, completion: Completion) -> Completion:
        """Keep ``completion`` under ``key``; returns it."""
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
        """Answer from the cache, or ask ``inner`` and store its reply."""
        key, hit = self._lookup(messages, schema, temperature, max_tokens, seed)
        return hit if hit is not None else self._store(key, self.inner.complete(
            messages, schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed))

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
        key, hit = self._lookup(messages, schema, temperature, max_tokens, seed)
        return hit if hit is not None else self._store(key, await self.inner.acomplete(
            messages, schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed))

    async def aclose(self) -> None:
        """Closes the wrapped backend (the cache file stays open until :meth:`close`)."""
        await self.inner.aclose()

    def close(self) -> None:
        """Close the SQLite connection and the inner backend."""
        with self._lock:
            self._conn.close()
        self.inner.close()
