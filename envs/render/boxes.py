"""Boxes drawn over the map: a person's answer box (:class:`TextEntry`) and a banner
(:func:`end_banner`: the end of an episode)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from orgteams.envs.render.style import Text

MARGIN = 10


@dataclass
class TextEntry:
    """A one-line answer box drawn over the map while a person is asked something.

    Characters come from TEXTINPUT events (what SDL sends for typing); KEYDOWN
    handles Enter (``answer`` becomes the text), Backspace and Escape (``answer``
    becomes ``escape_answer``, e.g. silence or ``wait``).
    """

    title: str
    prompt: str
    lines: list[str] = field(default_factory=list)  # the options or recent messages
    escape_answer: str = ""
    note: str = ""  # the last error or remark, drawn in red
    text: str = ""
    answer: str | None = None
    sees: str = ""  # what the person's agent sees now, wrapped above the options

    def handle_event(self, pg: Any, event: Any) -> bool:
        """Take one typing event; True when it was used."""
        if event.type == pg.TEXTINPUT:
            self.text += event.text
            return True
        if event.type != pg.KEYDOWN:
            return False
        if event.key in (pg.K_RETURN, pg.K_KP_ENTER):
            self.answer = self.text
        elif event.key == pg.K_BACKSPACE:
            self.text = self.text[:-1]
        elif event.key == pg.K_ESCAPE:
            self.answer = self.escape_answer
        return True  # other keys (F...) are typing, not window commands


def draw_entry(pg: Any, text: Text, surf, entry: TextEntry, width: int,
               at_top: bool = False) -> None:
    """The entry box along the bottom (or top) of ``surf``, ``width`` pixels wide; options
    in columns, what the agent sees above them. The caller puts it on the side away
    from the person's agent, so the map round it stays visible."""
    size, pad = 15, 12
    step = text.font(size).get_linesize() + 2
    sees = text.wrap(entry.sees, 13, width - 2 * pad, max_lines=3) if entry.sees else []
    sees_h = len(sees) * (text.font(13).get_linesize() + 1)
    col_w = max((text.width(s, size) for s in entry.lines), default=0) + 24
    cols = max(1, min(len(entry.lines), (width - 2 * pad) // max(col_w, 1)))
    rows = min(math.ceil(len(entry.lines) / cols), 14)
    shown = entry.lines[:rows * cols]
    if len(shown) < len(entry.lines):
        shown[-1] = f"... {len(entry.lines) - len(shown) + 1} more: type the id"
    rows_total = 1 + rows + 1 + bool(entry.note)
    box = pg.Rect(MARGIN, 0, width, rows_total * step + 2 * pad + 6 + sees_h)
    if at_top:
        box.top = MARGIN
    else:
        box.bottom = surf.get_height() - MARGIN
    shade = pg.Surface(box.size, pg.SRCALPHA)
    shade.fill((20, 22, 30, 235))
    surf.blit(shade, box)
    pg.draw.rect(surf, (255, 230, 150), box, 2, border_radius=6)
    x, y = box.x + pad, box.y + pad
    text.blit(surf, entry.title, (x, y), size, (255, 230, 150), True)
    for k, line in enumerate(sees):
        text.blit(surf, line, (x, y + step + k * (sees_h // len(sees))), 13, (170, 200, 235))
    y += sees_h
    for k, line in enumerate(shown):
        col, row = divmod(k, rows)
        text.blit(surf, line, (x + col * col_w, y + (1 + row) * step), size, (235, 235, 240))
    y += (1 + rows) * step + 6
    typed = f"{entry.prompt}{entry.text}_"
    while len(typed) > 1 and text.width(typed, size, True) > width - 2 * pad:
        typed = "..." + typed[4:]  # keep the end (what is being typed) visible
    text.blit(surf, typed, (x, y), size, (255, 255, 255), True)
    if entry.note:
        text.blit(surf, entry.note, (x, y + step), size, (255, 130, 120))


def end_banner(outcome: str, tick: int, limit: int, units_done: int, units_total: int,
               rounds: int | None = None, keys: str = "Q to close") -> list[str]:
    """The lines over the last frame of an episode, the same in ``run`` and ``play``:
    how it ended, the tick of the limit (and rounds), the goal units, the keys."""
    played = f"tick {tick} of {limit}" + (f", {rounds} rounds" if rounds is not None else "")
    return [f"Episode over: {outcome}", f"{played}, {units_done}/{units_total} goal units",
            keys]


def draw_banner(pg: Any, text: Text, surf, lines: list[str], width: int, avoid: list = ()):
    """A box at the top of the map area (the first ``width`` pixels) with ``lines``, or at
    its bottom when that hides fewer of ``avoid`` (agents, furniture holding objects: the
    last frame is what the person looks at). Returns the box."""
    size, pad = 18, 12
    step = text.font(size).get_linesize() + 2
    box = pg.Rect(0, MARGIN, min(width - 2 * MARGIN, max(
        text.width(s, size, True) for s in lines) + 2 * pad), len(lines) * step + 2 * pad)
    box.centerx = width // 2
    low = box.copy()
    low.bottom = surf.get_height() - MARGIN
    if len(low.collidelistall(avoid)) < len(box.collidelistall(avoid)):
        box = low
    shade = pg.Surface(box.size, pg.SRCALPHA)
    shade.fill((20, 22, 30, 235))
    surf.blit(shade, box)
    pg.draw.rect(surf, (255, 230, 150), box, 2, border_radius=6)
    for k, line in enumerate(lines):
        text.blit(surf, line, (box.centerx, box.y + pad + k * step), size,
                  (255, 230, 150) if k == 0 else (235, 235, 240), k == 0, anchor="midtop")
    return box
