"""Speech bubbles over the map: the newest few messages, each where it hides nothing that
matters, older rounds faded, long recipient lists shortened.

A bubble (its box and its tail) never overlaps another bubble, a name tag, an agent,
a room name, the goal furniture or the furniture next to the agents that speak
(:func:`~orgteams.envs.render.world.object_cells`). It is tried above, below and beside
its speaker, then further out; a message that finds no free spot gets no bubble and
stays in the panel's message log, which keeps it (:attr:`BubbleLayout.dropped`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.overlay import Overlay, Speech
from orgteams.envs.render.style import BUBBLE, Text, agent_color, shade

BUBBLE_FONT = 13
MAX_BUBBLES = 4  # the newest messages get bubbles; the panel's log has the rest
BUBBLE_ALPHA = (255, 170, 110)  # by age in rounds: this round, the last, older
GAP = 8  # pixels between a bubble and its speaker (and its name tag)
RINGS = 3  # spots are tried this many bubble-heights out


@dataclass
class Bubble:
    """One placed bubble: its box, its tail (a triangle to the speaker), its text."""

    box: Any  # pygame Rect
    tail: list[tuple[int, int]]
    lines: list[str]
    color: tuple[int, int, int]
    alpha: int
    stamp: str
    message: Speech

    def tail_rect(self, pg: Any):
        """The tail's bounding box, with its 2-pixel outline."""
        xs, ys = [p[0] for p in self.tail], [p[1] for p in self.tail]
        return pg.Rect(min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1
                       ).inflate(4, 4)


@dataclass
class BubbleLayout:
    """The bubbles placed (oldest first: the newest is drawn on top) and the messages
    that got none (no free spot, or the speaker is out of view)."""

    bubbles: list[Bubble] = field(default_factory=list)
    dropped: list[Speech] = field(default_factory=list)


def layout_bubbles(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                   overlay: Overlay, names: list[str], index: dict[str, int],
                   avoid: list = (), protected: list = (), tags: dict[int, Any] | None = None,
                   speakers: set[int] | None = None, prefer_clear: list = ()) -> BubbleLayout:
    """Place the newest messages (:data:`MAX_BUBBLES`) as speech bubbles near their senders.

    Args:
        avoid: Boxes no bubble may cover (name tags, room names).
        protected: Cells neither a bubble nor its tail may cover (goal furniture, the
            furniture next to the speakers).
        tags: Agent index -> its name tag (a tail points at the tag when there is one).
        speakers: The agents that may get a bubble (those drawn); None: all.
        prefer_clear: Boxes a bubble keeps clear of when it can (any furniture).
    """
    bounds = surf.get_rect()
    tags = tags or {}
    n = len(state.agent_pos)
    agents = [pg.Rect((p % state.scene.width) * cell, (p // state.scene.width) * cell,
                      cell, cell) for p in state.agent_pos]
    shown = range(n) if speakers is None else speakers
    size = BUBBLE_FONT
    max_w = min(240, max(140, bounds.width // 3))
    newest = list(overlay.latest.values())[-MAX_BUBBLES:]
    now = max((m.round for m in newest), default=0)
    out = BubbleLayout()
    placed: list[Bubble] = []
    for msg in reversed(newest):  # the newest gets the best spot
        a = index.get(msg.sender)
        if a is None or a >= n or a not in shown:
            out.dropped.append(msg)
            continue
        to = _receivers(msg.audience, names, index, n)
        lines = text.wrap(f"{to}{msg.text}", size, max_w - 12, max_lines=3)
        stamp = f"r{msg.round}"
        width = max(max(text.width(s, size) for s in lines),
                    text.width(stamp, 10) + text.width(lines[0], size) + 6) + 12
        height = len(lines) * text.font(size).get_linesize() + 8
        target = agents[a].union(tags[a]) if a in tags else agents[a]
        # A box may not cover other agents, tags, names, bubbles or protected cells; its
        # tail may cross its own speaker's tag but nothing protected, nor another bubble.
        others = [r for b, r in enumerate(agents) if b != a and b in shown]
        boxes = [b.box for b in placed]
        other_tags = [t for b, t in tags.items() if b != a]
        spot = _place(pg, (width, height), target, bounds,
                      [*others, *avoid, *protected, *boxes, agents[a]],
                      [*protected, *boxes, *others, *other_tags], prefer_clear)
        if spot is None:
            out.dropped.append(msg)
            continue
        box, tail = spot
        alpha = BUBBLE_ALPHA[min(now - msg.round, len(BUBBLE_ALPHA) - 1)]
        placed.append(Bubble(box, tail, lines, agent_color(a), alpha, stamp, msg))
    out.bubbles = placed[::-1]  # drawn oldest first, so the newest lies on top
    return out


def draw_tails(pg: Any, surf, bubbles: list[Bubble]) -> None:
    for b in bubbles:
        fill, edge = (BUBBLE, b.color) if b.alpha == 255 else (
            _fade(BUBBLE, b.alpha), _fade(b.color, b.alpha))
        pg.draw.polygon(surf, fill, b.tail)
        pg.draw.polygon(surf, edge, b.tail, 2)


def _fade(color, alpha: int) -> tuple[int, int, int]:
    """``color`` mixed with white as if drawn at ``alpha`` over a light floor."""
    return shade(color, 1 + (255 - alpha) / 255 * 0.8)


def draw_bubbles(pg: Any, text: Text, surf, bubbles: list[Bubble]) -> None:
    step = text.font(BUBBLE_FONT).get_linesize()
    for b in bubbles:
        bubble = pg.Surface(b.box.size, pg.SRCALPHA)
        local = bubble.get_rect()
        pg.draw.rect(bubble, BUBBLE, local, border_radius=7)
        pg.draw.rect(bubble, b.color, local, 2, border_radius=7)
        for k, line in enumerate(b.lines):
            text.blit(bubble, line, (6, 4 + k * step), BUBBLE_FONT, (25, 25, 30))
        text.blit(bubble, b.stamp, (local.right - 5, 3), 10, (120, 120, 130), anchor="topright")
        if b.alpha < 255:
            bubble.set_alpha(b.alpha)
        surf.blit(bubble, b.box)


def _spots(pg, size, target, k: int):
    """Candidate boxes round ``target`` at ring ``k`` (0 nearest): above, below, right,
    left (each centred, then shifted)."""
    w, h = size
    x = target.centerx
    off_y, off_x = GAP + k * (h + 6), GAP + k * 40
    above, below = target.top - off_y - h, target.bottom + off_y
    for y in (above, below):
        for dx in (x - w // 2, x - w + 14, x - 14):
            yield pg.Rect(dx, y, w, h)
    for dx in (target.right + off_x, target.left - off_x - w):
        for dy in (target.centery - h // 2, target.top - h, target.bottom):
            yield pg.Rect(dx, dy, w, h)


def _tail(box, target) -> list[tuple[int, int]]:
    """A triangle from the side of ``box`` that faces ``target`` to target's edge."""
    if box.bottom <= target.top or box.top >= target.bottom:
        above = box.bottom <= target.top
        base_y = box.bottom - 2 if above else box.top + 2
        x = min(max(target.centerx, box.x + 10), box.right - 10)
        tip = (min(max(x, target.left + 4), target.right - 4),
               target.top if above else target.bottom)
        return [(x - 6, base_y), (x + 6, base_y), tip]
    left = box.right <= target.left
    base_x = box.right - 2 if left else box.x + 2
    y = min(max(target.centery, box.y + 8), box.bottom - 8)
    tip = (target.left if left else target.right, min(max(y, target.top + 4), target.bottom - 4))
    return [(base_x, y - 6), (base_x, y + 6), tip]


def _place(pg, size, target, bounds, box_avoid, tail_avoid, prefer_clear=()):
    """``(box, tail)`` of the first free spot round ``target``, nearest ring first (within
    a ring, spots clear of ``prefer_clear``, any furniture, first), or None."""
    for k in range(RINGS):
        for avoid in ([*box_avoid, *prefer_clear], box_avoid) if prefer_clear else (box_avoid,):
            for spot in _spots(pg, size, target, k):
                box = spot.clamp(bounds)
                if box.colliderect(target) or box.collidelist(avoid) >= 0:
                    continue
                tail = _tail(box, target)
                xs, ys = [p[0] for p in tail], [p[1] for p in tail]
                rect = pg.Rect(min(xs), min(ys), max(xs) - min(xs) + 1,
                               max(ys) - min(ys) + 1).inflate(4, 4)
                if rect.collidelist(tail_avoid) < 0:
                    return box, tail
    return None


def _receivers(receivers, names, index, n) -> str:
    """'' for a broadcast, '@Bob: ' or '@Bob,Eve: ' for one or two, '@members (6): ' else."""
    ids = [index[x] for x in receivers if x in index]
    if not receivers or len(ids) >= n - 1:
        return ""  # a broadcast needs no address
    if len(ids) > 2:
        return f"@members ({len(ids)}): "
    return "@" + ",".join(names[i] for i in ids) + ": "
