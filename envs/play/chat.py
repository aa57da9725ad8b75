"""The keyboard player's message box in ``orgteams play``: T opens it, Enter sends.

:class:`PlayerChat` keeps a one-line :class:`~orgteams.envs.render.boxes.TextEntry`
that the play window draws over the map. Typing comes from TEXTINPUT events (SDL
text input is on only while the box is open, so the T that opened it is not typed);
Enter turns the line into a :class:`ChatLine` from the player's agent: to everyone,
or ``@Name text`` to one teammate (several: ``@Bob @Carol text``; ``@Bob: text`` and
``@Bob, @Carol: text`` too) by display name or agent id, case-insensitive (the team
glue, :mod:`orgteams.play`, makes it a team message). Escape cancels. A line is capped at
:data:`~orgteams.envs.core.limits.MESSAGE_MAX_CHARS` characters, as every member's
message is: typing past it is refused with a note. What was typed is data: it is
never interpreted beyond the leading ``@names``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orgteams.envs.core.limits import MESSAGE_MAX_CHARS
from orgteams.envs.render.boxes import TextEntry
from orgteams.errors import did_you_mean

__all__ = ["CHAT_HELP", "ChatLine", "PlayerChat", "parse_chat"]

CHAT_HELP = ["Enter: send to everyone", "@Name text: to one teammate", "Esc: cancel"]
_ADDRESS = re.compile(r"@([^\s:,]*)[:,]?")  # one leading @name, its colon or comma


@dataclass(frozen=True)
class ChatLine:
    """A line the player sent.

    Attributes:
        sender: The player's agent id.
        receivers: The agent ids it names, in order; ``()``: everyone.
        text: What was said (without the ``@names``).
    """

    sender: str
    receivers: tuple[str, ...]
    text: str


def parse_chat(line: str, sender: str, names: Mapping[str, str]) -> ChatLine | None:
    """The line a player typed, read (None for an empty line).

    Args:
        line: What the player typed.
        sender: The player's agent id.
        names: Agent id -> display name of every agent, the player included.

    Raises:
        ValueError: An ``@name`` that is nobody (or the player), or nothing after the
            names; the text says what to type instead.
    """
    text = line.strip()
    if not text:
        return None
    lookup = {k.casefold(): a for a, n in names.items() for k in (a, n)}
    others = [n for a, n in names.items() if a != sender]
    receivers: list[str] = []
    while text.startswith("@"):
        # "@Bob text", "@Bob: text", "@Bob, @Carol: text": a colon or comma may end a name.
        address = _ADDRESS.match(text)
        word, text = address.group(1), text[address.end():].strip()
        agent = lookup.get(word.casefold())
        if agent is None or agent == sender:
            who = "yourself" if agent == sender else f"nobody called {word!r}"
            raise ValueError(f"@{word}: that is {who}.{did_you_mean(word, others)} "
                             f"Teammates: {', '.join(others)}")
        receivers.append(agent)
    if not text:
        raise ValueError("Write the message after the name(s).")
    if len(text) > MESSAGE_MAX_CHARS:
        raise ValueError(f"A message has at most {MESSAGE_MAX_CHARS} characters; "
                         f"got {len(text)}.")
    return ChatLine(sender, tuple(dict.fromkeys(receivers)), text)


class PlayerChat:
    """The message box of one player; :attr:`entry` is set while it is open.

    Args:
        sender: The player's agent id.
        names: Returns agent id -> display name of every agent when a line is sent.
    """

    def __init__(self, sender: str, names: Any) -> None:
        self.sender, self.names = sender, names
        self.entry: TextEntry | None = None

    @property
    def is_open(self) -> bool:
        return self.entry is not None

    def open(self, pg: Any, note: str = "") -> None:
        """Show an empty box and start SDL text input (the typed characters)."""
        self.entry = TextEntry("Message your teammates", "> ", list(CHAT_HELP), note=note)
        pg.key.start_text_input()

    def close(self, pg: Any) -> None:
        self.entry = None
        pg.key.stop_text_input()

    def handle_event(self, pg: Any, event: Any) -> tuple[str, ChatLine | None] | None:
        """Take one event while open: None while typing, else ``(outcome, line)``
        with outcome ``"sent"`` (and the line), ``"empty"`` or ``"cancelled"``."""
        entry = self.entry
        if entry is None:
            raise RuntimeError("PlayerChat.handle_event called while the box is closed")
        if event.type == pg.TEXTINPUT:
            room = MESSAGE_MAX_CHARS - len(entry.text)
            entry.text += event.text[:max(room, 0)]
            entry.note = (f"A message has at most {MESSAGE_MAX_CHARS} characters."
                          if len(event.text) > room else "")
            return None
        if event.type != pg.KEYDOWN:
            return None
        if event.key == pg.K_ESCAPE:
            self.close(pg)
            return "cancelled", None
        if event.key not in (pg.K_RETURN, pg.K_KP_ENTER):
            entry.handle_event(pg, event)  # Backspace; other keys are typing, not commands
            return None
        try:
            message = parse_chat(entry.text, self.sender, self.names())
        except ValueError as exc:
            entry.note = str(exc)  # the line stays, to be corrected
            return None
        self.close(pg)
        return ("sent", message) if message is not None else ("empty", None)
