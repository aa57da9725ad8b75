"""Model-written text in prompts is data: one line, in quotes, capped.

A teammate's message pasted raw could forge prompt structure (a ``Round 1, Alice to
everyone: ...`` line, an ``Organization instruction:`` header). :func:`quote_text` turns
it into one JSON string literal (newlines, quotes and every line separator escaped), so
it always stays inside its own line's quotes; :func:`quote_block` marks each line of a
longer text (the organization's instruction) with ``> `` so it cannot pass for a header.
"""

from __future__ import annotations

import json

__all__ = ["MAX_MESSAGE_CHARS", "MAX_ROLE_CHARS", "one_line", "printable", "quote_block",
           "quote_text"]

MAX_MESSAGE_CHARS = 600
"""Longest message text kept in a prompt (longer ones are cut, with a marker)."""
MAX_ROLE_CHARS = 40
"""Longest self-chosen role kept in a prompt."""

# json.dumps(ensure_ascii=False) keeps these, and str.splitlines (and some tokenizers)
# treat them as line breaks.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def quote_text(text: object, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` as one JSON string literal of at most ``max_chars`` characters of content."""
    text = str(text)
    if len(text) > max_chars:
        text = text[:max_chars] + " [cut]"
    quoted = json.dumps(text, ensure_ascii=False)
    for raw, escaped in _LINE_BREAKS.items():
        quoted = quoted.replace(raw, escaped)
    return quoted


def one_line(text: object, max_chars: int = MAX_ROLE_CHARS) -> str:
    """``text`` with its whitespace (line breaks included) collapsed, cut to ``max_chars``."""
    return " ".join(str(text).split())[:max_chars]


def quote_block(text: str, prefix: str = "> ") -> str:
    """Every line of ``text`` (as ``str.splitlines`` sees lines) behind ``prefix``."""
    return "\n".join(prefix + line for line in text.splitlines())


def printable(text: object, keep: str = "") -> str:
    """``text`` safe to write to a terminal: each character that is not printable (an
    escape sequence's ESC, a carriage return, a bell, a line break not in ``keep``) as
    its Python escape (``\\x1b``), so model or server text cannot clear the screen, set
    the window title or forge a line of ours."""
    return "".join(c if c.isprintable() or c in keep else c.encode("unicode_escape").decode()
                   for c in str(text))

