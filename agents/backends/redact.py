"""Secrets never reach what we record: URLs lose their credentials, text its key-like strings.

:func:`scrub_url` blanks a URL's userinfo (``http://user:pass@host`` ->
``http://***@host``) and the values of query parameters whose names look secret
(``?api_key=...``, ``token``, ``sig``...). :func:`scrub_text` does that to every URL in a
text and masks credential shapes: ``sk-...`` API keys, GitHub/Slack/AWS/Google/Hugging
Face token shapes, JSON web tokens,
``Bearer ...`` and ``Token ...`` values, ``Basic ...`` values (base64 of
``user:password``), the value of an ``Authorization``, ``Proxy-Authorization``,
``api-key`` or ``x-api-key`` header however it is written (``name: value``, JSON,
a Python dict, a list of values), and ``api_key=...``/``password: ...`` pairs.
:class:`Secrets` also masks what a backend was configured with (an API key, a URL's
user:password and password) in every form: as written, URL-decoded and in base64
(standard and URL-safe, alone or at any offset inside a longer base64 string, as in
``Basic base64(user:password)``).

Every pattern is bounded, so scrubbing is linear in the text's length (about 0.3 s
per million characters). Text a server can make long is cut before it is scrubbed:
:func:`cut_scrubbed` scrubs only a capped prefix (the cap plus a margin) and keeps at
most the cap, so a secret that the cut would halve is dropped, not shown in part;
:func:`capped_reply` keeps a model reply's first :data:`MAX_REPLY_CHARS` that way and
notes its full length.

Backends scrub their error messages, reprs and replies; the response cache scrubs
every reply again before storing it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "MAX_REPLY_CHARS", "Secrets", "capped_reply", "cut_scrubbed", "scrub_text",
           "scrub_url", "scrub_value", "url_credentials"]

MASK = "***"
_SECRET_PARAM = re.compile(r"(?i)key|token|secret|passw|auth|sig|credential|session")
# The scheme is bounded ({0,31}): an unbounded one made every letter of a long text
# without "://" rescan the rest of its word (quadratic: 675 s for 2 MB).
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s\"'<>]+")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]{0,31}://)[^/?#]*@")
_TOKEN = r"[A-Za-z0-9._~+/=-]"
_KEY_LIKE = [
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),  # GitHub
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API keys (Gemini's OpenAI endpoint)
    re.compile(r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face tokens (its inference router)
    # JSON web tokens (header.payload.signature, each base64url; the first two "eyJ"); a
    # token starts a run of base64url ("a-eyJb-eyJc-..." would start one per dash, each
    # rescanning the rest of the run: quadratic)
    re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(rf"(?i)\bBearer[ \t]{{1,8}}{_TOKEN}{{8,}}"),
    # "Token <value>" (Django REST, some gateways): a value with a digit, 12+ long, so
    # prose ("token limitations") stays.
    re.compile(rf"(?i)\bToken[ \t]{{1,8}}(?={_TOKEN}{{0,256}}\d){_TOKEN}{{12,}}"),
]
# "Basic <base64>" is masked when the base64 decodes to "user:password" (prose such as
# "Basic strategy" does not decode to anything with a colon).
_BASIC = re.compile(r"(?i)\bBasic[ \t]{1,8}([A-Za-z0-9+/]{4,}={0,2})")
# A credential header's value as text, JSON or a dict repr shows it:
# 'Authorization: Basic ...', '"x-api-key": "..."', "'authorization': '...'", and as a
# list of values, as Go's http.Header is dumped: '"Authorization": ["Bearer ..."]'.
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key)"
    r"([\"']?[ \t]{0,8}[:=][ \t]{0,8}(?:\[[ \t]{0,8})?[\"']?)"
    r"(?:(?:Basic|Bearer|Token|Digest)[ \t]{1,8})?[^\s\"'&,;)\]}>]+")
_PAIR = re.compile(r"(?i)\b((?:api[_-]?key|access[_-]?token|secret|password|passwd|token)"
                   r"[\"']?[ \t]{0,8}[=:][ \t]{0,8})([\"']?)[^\s\"'&,;]{4,}")

MIN_SECRET = 4
"""Configured secrets shorter than this are not searched for in free text (they would
mask ordinary words); their URL and base64 ``user:password`` forms still are."""
_MIN_BASE64_FORM = 6
_URLSAFE = str.maketrans("+/", "-_")


def scrub_url(url: str | None) -> str | None:
    """``url`` without userinfo and with secret-looking query values masked."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # 'http://user:pass@[::1': its userinfo goes all the same
        return scrub_text(_USERINFO.sub(rf"\1{MASK}@", url), urls=False)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_credentials(url: str | None) -> tuple[str | None, str | None, str | None]:
    """``(url without userinfo, user, password)``; user and password URL-decoded, None
    when the URL has none (or ``url`` is None)."""
    if not url:
        return url, None, None
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None, None
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, unquote(user), unquote(password) if password else None


def scrub_text(text: str, *, urls: bool = True) -> str:
    """``text`` with every URL scrubbed (:func:`scrub_url`) and credential shapes masked
    (see the module docstring). Linear in ``len(text)``."""
    if urls:
        text = _URL.sub(_scrub_match, text)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _BASIC.sub(_basic_match, text)
    for pattern in _KEY_LIKE:
        text = pattern.sub(MASK, text)
    return _PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


def _scrub_match(match: re.Match[str]) -> str:
    url = match.group(0)
    tail = len(url) - len(url.rstrip(".,;:!?)]}"))  # sentence punctuation after a URL
    return (scrub_url(url[: len(url) - tail]) or "") + url[len(url) - tail:]


def _basic_match(match: re.Match[str]) -> str:
    value = match.group(1)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except ValueError:
        return match.group(0)
    return f"{match.group(0)[: match.start(1) - match.start(0)]}{MASK}" if b":" in decoded \
        else match.group(0)


def scrub_value(value: Any, scrub: Callable[[str], str] = scrub_text) -> Any:
    """Every string inside ``value`` (dicts, lists) scrubbed with ``scrub``."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: scrub_value(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_value(v, scrub) for v in value)
    return value


SCRUB_MARGIN = 1024
"""Characters past a cap that :func:`cut_scrubbed` scrubs too, so that a secret of up
to this length which the cap would cut is recognized whole and masked."""


def cut_scrubbed(text: str, limit: int, scrub: Callable[[str], str] = scrub_text) -> str:
    """The first ``limit`` characters of ``text``, scrubbed (so at most ``limit``: a mask
    is shorter than what it hides), in time linear in ``limit`` whatever ``len(text)``.

    Only ``text[:limit + SCRUB_MARGIN]`` is scrubbed. When the text is longer, the
    scrubbed window's last ``SCRUB_MARGIN`` characters are dropped: a secret the window
    cuts in two is not recognized, and it can only lie there.
    """
    window = text[: limit + SCRUB_MARGIN]
    scrubbed = scrub(window)
    if len(text) > len(window):
        return scrubbed[: max(0, min(limit, len(scrubbed) - SCRUB_MARGIN))]
    return scrubbed[:limit]


MAX_REPLY_CHARS = 100_000
"""Longest model reply kept (characters; about 25,000 tokens, 12 times the largest
``max_tokens`` we ask for). A longer reply keeps its scrubbed start and a note of its
full length."""


_CUT_NOTE = re.compile(r" \[reply cut at [\d,]+ characters; it had [\d,]+\]\Z")
_NOTE_ROOM = 80


def capped_reply(text: str, scrub: Callable[[str], str] = scrub_text) -> str:
    """A model's ``text`` as we keep it: scrubbed, and past :data:`MAX_REPLY_CHARS` cut
    with a note of its full length (only the kept start is scanned for secrets). A text
    it returned comes back unchanged (the cache applies it to every backend's reply)."""
    if len(text) <= MAX_REPLY_CHARS or (len(text) <= MAX_REPLY_CHARS + _NOTE_ROOM
                                        and _CUT_NOTE.search(text, len(text) - _NOTE_ROOM)):
        return scrub(text)
    return (f"{cut_scrubbed(text, MAX_REPLY_CHARS, scrub)} [reply cut at "
            f"{MAX_REPLY_CHARS:,} characters; it had {len(text):,}]")


def _base64_forms(data: bytes) -> set[str]:
    """Base64 texts that show ``data``: its whole encoding, and for each of the three
    offsets it can have inside a longer encoded string, the characters that depend on
    ``data`` alone; standard and URL-safe alphabets."""
    whole = base64.b64encode(data).decode()
    forms = {whole, whole.rstrip("=")}
    for pad in range(3):
        encoded = base64.b64encode(bytes(pad) + data).decode()
        forms.add(encoded[-(-8 * pad // 6): 8 * (pad + len(data)) // 6])
    forms |= {f.translate(_URLSAFE) for f in forms}
    return {f for f in forms if len(f) >= _MIN_BASE64_FORM}


class Secrets:
    """The secrets one backend was configured with, masked in every form by :meth:`scrub`.

    Args:
        values: API keys, passwords... (None and empty ones are skipped; see
            :data:`MIN_SECRET`).
        pairs: ``(user, password)`` pairs sent as HTTP Basic auth: ``user:password``
            and its base64 are masked too.
    """

    def __init__(self, *values: str | None,
                 pairs: tuple[tuple[str, str], ...] = ()) -> None:
        texts = [v for v in values if v] + [f"{user}:{password}" for user, password in pairs]
        forms: set[str] = set()
        for text in texts:
            for variant in {text, unquote(text), quote(unquote(text), safe="")}:
                if len(variant) >= MIN_SECRET:
                    forms.add(variant)
                forms |= _base64_forms(variant.encode())
        # Longest first: a form inside a longer one (a key inside its base64) must not
        # break the longer one before it is found.
        self._forms = sorted(forms, key=lambda f: (-len(f), f))

    def __repr__(self) -> str:
        return f"Secrets({len(self._forms)} forms)"

    def scrub(self, text: str) -> str:
        """``text`` with every form of these secrets, and everything :func:`scrub_text`
        masks, masked."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        return scrub_text(text)
