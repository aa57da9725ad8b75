"""Colours, sizes and a cached text drawer shared by the pygame renderer modules.

Only :mod:`orgteams.envs.render.renderer` imports pygame at module level for users; this
module receives the ``pygame`` module object so that it stays import-light.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKGROUND = (32, 36, 44)
WALL = (70, 74, 86)
WALL_EDGE = (52, 55, 64)
PANEL = (246, 246, 243)
PANEL_TEXT = (40, 42, 48)
PANEL_MUTED = (120, 122, 130)
PANEL_RULE = (215, 215, 210)
DOOR_CLOSED = (150, 95, 45)
DOOR_EDGE = (95, 58, 25)
GOAL_OUTLINE = (235, 180, 30)
DONE_GREEN = (40, 150, 70)
BUBBLE = (255, 255, 250)
BUBBLE_EDGE = (60, 60, 70)
MARKER_COLORS = {"abstained": (230, 120, 30), "idle": (130, 130, 140)}

# Distinct, saturated agent colours: Tableau 10 without its grey (grey agents vanish
# on grey walls), then dark and bright colours that stay apart from those and from
# the room tints, 16 in all; more agents get golden-ratio hues.
_AGENT_BASE = ((31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189),
               (255, 127, 14), (23, 190, 207), (227, 119, 194), (140, 86, 75),
               (188, 189, 34), (0, 0, 117), (128, 0, 0), (0, 110, 100),
               (240, 50, 230), (110, 110, 0), (255, 215, 0), (25, 25, 25))
ROLE_COLORS = {"leader": (235, 180, 30), "vice_leader": (170, 178, 190)}
YOU_COLOR = (255, 210, 40)

PANEL_WIDTH = 340
MIN_HEIGHT = 680
MAX_MAP = (980, 760)  # pixels the map may take before cells shrink
CELL_RANGE = (18, 48)


def agent_color(i: int) -> tuple[int, int, int]:
    """A colour per agent index; stable, and distinct for the first sixteen."""
    if i < len(_AGENT_BASE):
        return _AGENT_BASE[i]
    h = (i * 0.618033988749895) % 1.0
    r, g, b = colorsys.hsv_to_rgb(h, 0.75, 0.85)
    return int(r * 255), int(g * 255), int(b * 255)


def shade(color: tuple[int, ...], factor: float) -> tuple[int, int, int]:
    """Darker (factor < 1) or lighter (factor > 1, towards white) version of a colour."""
    if factor <= 1:
        return tuple(int(c * factor) for c in color[:3])  # type: ignore[return-value]
    t = factor - 1
    return tuple(int(c + (255 - c) * t) for c in color[:3])  # type: ignore[return-value]


def text_color_on(color: tuple[int, ...]) -> tuple[int, int, int]:
    """Black or white, whichever reads better on ``color``."""
    r, g, b = color[:3]
    return (20, 20, 20) if 0.299 * r + 0.587 * g + 0.114 * b > 150 else (255, 255, 255)


def cell_size_for(width: int, height: int) -> int:
    """Pixels per grid cell so that a layout of ``width`` x ``height`` cells fits."""
    lo, hi = CELL_RANGE
    return max(lo, min(hi, MAX_MAP[0] // width, MAX_MAP[1] // height))


def default_fonts() -> tuple[str | None, str | None]:
    """The shipped DejaVu Sans (regular, bold) paths, or ``None`` where a file is missing."""
    try:
        from orgteams.assets import asset_dir

        folder = asset_dir("fonts")
    except (ImportError, ModuleNotFoundError, TypeError):
        return None, None
    paths = [folder / "DejaVuSans.ttf", folder / "DejaVuSans-Bold.ttf"]
    return tuple(str(p) if p.is_file() else None for p in paths)  # type: ignore[return-value]


def drawable(text: str) -> str:
    """``text`` as SDL_ttf can draw it: a NUL (``ValueError: A null character was found
    in the text``) and a lone surrogate (``UnicodeEncodeError``), both of which a model's
    JSON reply can carry (``"\\u0000"``, ``"\\ud800"``), become U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


@dataclass
class Text:
    """Draws text with cached fonts and cached rendered strings.

    ``font_path`` is optional (default: the DejaVu Sans shipped in
    ``assets/fonts``); when a file is missing or unreadable the pygame default
    font is used, so rendering never fails for want of a font file.
    """

    pygame: Any
    font_path: str | None = None

    def __post_init__(self) -> None:
        self._fonts: dict[tuple[int, bool], Any] = {}
        self._cache: dict[tuple, Any] = {}
        if self.font_path is None:
            self._paths = default_fonts()
        elif Path(self.font_path).is_file():
            self._paths = (self.font_path, None)
        else:
            self._paths = (None, None)

    def font(self, size: int, bold: bool = False):
        key = (size, bold)
        if key not in self._fonts:
            regular, heavy = self._paths
            path = heavy if bold and heavy else regular
            try:
                f = self.pygame.font.Font(path, size)
            except (OSError, self.pygame.error):
                f = self.pygame.font.Font(None, size)
                path = None
            if bold and path != heavy:
                f.set_bold(True)  # no bold file: let SDL_ttf embolden
            self._fonts[key] = f
        return self._fonts[key]

    def render(self, text: str, size: int, color: tuple[int, ...], bold: bool = False):
        key = (text, size, color, bold)
        surf = self._cache.get(key)
        if surf is None:
            if len(self._cache) > 4000:  # bounded: messages change every round
                self._cache.clear()
            surf = self.font(size, bold).render(drawable(text), True, color)
            self._cache[key] = surf
        return surf

    def width(self, text: str, size: int, bold: bool = False) -> int:
        return self.font(size, bold).size(drawable(text))[0]

    def wrap(self, text: str, size: int, max_width: int, max_lines: int = 3) -> list[str]:
        """Greedy word wrap; the last line ends in '...' when the text does not fit."""
        words = text.split()
        lines: list[str] = []
        line = ""
        for word in words:
            trial = f"{line} {word}" if line else word
            if self.width(trial, size) <= max_width:
                line = trial
                continue
            if line:
                lines.append(line)
            line = word
            while self.width(line, size) > max_width and len(line) > 1:
                cut = len(line) - 1
                while cut > 1 and self.width(line[:cut], size) > max_width:
                    cut -= 1
                lines.append(line[:cut])
                line = line[cut:]
        if line:
            lines.append(line)
        if len(lines) > max_lines:
            last = lines[max_lines - 1]
            while last and self.width(last + "...", size) > max_width:
                last = last[:-1]
            lines = lines[:max_lines - 1] + [last.rstrip() + "..."]
        return lines

    def blit(self, target, text: str, pos: tuple[int, int], size: int,
             color: tuple[int, ...], bold: bool = False, anchor: str = "topleft"):
        surf = self.render(text, size, color, bold)
        rect = surf.get_rect(**{anchor: pos})
        target.blit(surf, rect)
        return rect
