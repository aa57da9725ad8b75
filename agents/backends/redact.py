"""Secrets never reach what we record: URLs lose their credentials, text its key-like strings.

:func:`scrub_url` blanks a URL's userinfo (``http://user:pass@host`` ->
``http://***@host``) and the values of query parameters whose names look secret
(``?api_key=...``, ``token``, ``sig``...). :func:`scrub_text` does that to every URL in a
text and blanks key-like strings (``sk-...`` API keys, ``Bearer`` tokens,
``api_key=...`` pairs, GitHub/Slack/AWS token shapes). Backends scrub their error
messages and reprs; the response cache scrubs every reply before storing it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["scrub_text", "scrub_url", "scrub_value"]

MASK = "***"
_SECRET_PARAM = re.compile(r"(?i)key|token|secret|passw|auth|sig|credential|session")
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
_KEY_LIKE = [
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),  # GitHub
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}"),
]
_PAIR = re.compile(r"(?i)\b((?:api[_-]?key|access[_-]?token|secret|password|token)\s*[=:]\s*)"
                   r"([\"']?)[^\s\"'&,;]{4,}")


def scrub_url(url: str | None) -> str | None:
    """``url`` without userinfo and with secret-looking query values masked."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub_text(url, urls=False)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub_text(text: str, *, urls: bool = True) -> str:
    """``text`` with every URL scrubbed (:func:`scrub_url`) and key-like strings masked."""
    if urls:
        text = _URL.sub(_scrub_match, text)
    for pattern in _KEY_LIKE:
        text = pattern.sub(MASK, text)
    return _PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


def _scrub_match(match: re.Match[str]) -> str:
    url = match.group(0)
    tail = len(url) - len(url.rstrip(".,;:!?)]}"))  # sentence punctuation after a URL
    return (scrub_url(url[: len(url) - tail]) or "") + url[len(url) - tail:]


def scrub_value(value: Any) -> Any:
    """Every string inside ``value`` (dicts, lists) scrubbed with :func:`scrub_text`."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_value(v) for v in value)
    return value
