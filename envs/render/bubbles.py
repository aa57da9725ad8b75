"""Speech bubbles over the map: the newest few messages, placed clear of each other and
of agents and their name tags, older rounds faded, long recipient lists shortened."""

from __future__ import annotations

from typing import Any

from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.overlay import Overlay
from orgteams.envs.render.style import BUBBLE, Text, agent_color, shade

BUBBLE_FONT = 13
MAX_BUBBLES = 4  # the newest messages get bubbles; the panel's log has the rest
BUBBLE_ALPHA = (255, 170, 110)  # by age in rounds: this round, the last, older


def layout_bubbles(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                   overlay: Overlay, names: list[str], index: dict[str, int],
                   avoid: list = ()) -> list[tuple]:
    """Place the newest messages (:data:`MAX_BUBBLES`) as speech bubbles near their senders.

    Bubbles keep clear of each other, of agents and of ``avoid`` (name tags, room
    names) where they can; older rounds are faded. Returns ``(box, tail, lines,
    color, alpha, round stamp)`` per bubble: tails are drawn under the agents
    (:func:`draw_tails`) and boxes over them (:func:`draw_bubbles`).
    """
    bounds = surf.get_rect()
    w = state.scene.width
    obstacles = [pg.Rect((p % w) * cell, (p // w) * cell, cell, cell).inflate(4, 4)
                 for p in state.agent_pos] + [r.inflate(2, 2) for r in avoid]
    size = BUBBLE_FONT
    max_w = min(240, max(140, bounds.width // 3))
    newest = list(overlay.latest.values())[-MAX_BUBBLES:]
    now = max((m.round for m in newest), default=0)
    placed: list[Any] = []
    out = []
    for msg in reversed(newest):  # the newest gets the best spot
        a = index.get(msg.sender)
        if a is None or a >= len(state.agent_pos):
            continue
        r, c = divmod(state.agent_pos[a], w)
        anchor = (c * cell + cell // 2, r * cell)
        to = _receivers(msg.audience, names, index, len(state.agent_pos))
        lines = text.wrap(f"{to}{msg.text}", size, max_w - 12, max_lines=3)
        stamp = f"r{msg.round}"
        width = max(max(text.width(s, size) for s in lines),
                    text.width(stamp, 10) + text.width(lines[0], size) + 6) + 12
        height = len(lines) * text.font(size).get_linesize() + 8
        box = _place(pg, (width, height), anchor, cell, bounds, placed + obstacles)
        placed.append(box)
        above = box.bottom <= anchor[1]
        tail_y = box.bottom - 2 if above else box.top + 2
        # The tail stops at the name tag (above) or the cell edge (below).
        tip = (anchor[0], anchor[1] - 14 if above else anchor[1] + cell + 2)
        base_x = min(max(anchor[0], box.x + 10), box.right - 10)
        tail = [(base_x - 6, tail_y), (base_x + 6, tail_y), tip]
        alpha = BUBBLE_ALPHA[min(now - msg.round, len(BUBBLE_ALPHA) - 1)]
        out.append((box, tail, lines, agent_color(a), alpha, stamp))
    return out[::-1]  # drawn oldest first, so the newest lies on top


def draw_tails(pg: Any, surf, bubbles: list[tuple]) -> None:
    for _, tail, _, color, alpha, _ in bubbles:
        fill, edge = (BUBBLE, color) if alpha == 255 else (
            _fade(BUBBLE, alpha), _fade(color, alpha))
        pg.draw.polygon(surf, fill, tail)
        pg.draw.polygon(surf, edge, tail, 2)


def _fade(color, alpha: int) -> tuple[int, int, int]:
    """``color`` mixed with white as if drawn at ``alpha`` over a light floor."""
    return shade(color, 1 + (255 - alpha) / 255 * 0.8)


def draw_bubbles(pg: Any, text: Text, surf, bubbles: list[tuple]) -> None:
    step = text.font(BUBBLE_FONT).get_linesize()
    for box, _, lines, color, alpha, stamp in bubbles:
        bubble = pg.Surface(box.size, pg.SRCALPHA)
        local = bubble.get_rect()
        pg.draw.rect(bubble, BUBBLE, local, border_radius=7)
        pg.draw.rect(bubble, color, local, 2, border_radius=7)
        for k, line in enumerate(lines):
            text.blit(bubble, line, (6, 4 + k * step), BUBBLE_FONT, (25, 25, 30))
        text.blit(bubble, stamp, (local.right - 5, 3), 10, (120, 120, 130), anchor="topright")
        if alpha < 255:
            bubble.set_alpha(alpha)
        surf.blit(bubble, box)


def _place(pg, size, anchor, cell, bounds, avoid):
    """Where a bubble goes: above, beside or below its agent, clear of others if possible."""
    w, h = size
    x, y = anchor
    gap = 24
    spots = []
    for dy in (y - gap - h, y + cell + gap):
        for dx in (x - w // 2, x - w + 14, x - 14):
            spots.append(pg.Rect(dx, dy, w, h))
    for k in range(1, 4):
        spots.append(pg.Rect(x - w // 2, y - gap - h - k * (h + 6), w, h))
        spots.append(pg.Rect(x - w // 2, y + cell + gap + k * (h + 6), w, h))
    first = None
    for box in spots:
        clamped = box.clamp(bounds)
        if clamped != box and first is not None:
            continue
        first = first or clamped
        if clamped.collidelist(avoid) < 0:
            return clamped
    return first


def _receivers(receivers, names, index, n) -> str:
    """'' for a broadcast, '@Bob: ' or '@Bob,Eve: ' for one or two, '@members (6): ' else."""
    ids = [index[x] for x in receivers if x in index]
    if not receivers or len(ids) >= n - 1:
        return ""  # a broadcast needs no address
    if len(ids) > 2:
        return f"@members ({len(ids)}): "
    return "@" + ",".join(names[i] for i in ids) + ": "
