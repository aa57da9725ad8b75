"""Drawing the house: a cached static layer, then furniture, objects and agents per frame.

The static layer (outside, walls, room floors and their names) depends only on the
layout and the cell size, so it is drawn once and blitted every frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orgteams.envs.catalog import load_catalog, room_type
from orgteams.envs.layout import FLOOR, FURNITURE, OUTSIDE, WALL, Layout
from orgteams.envs.overlay import Overlay
from orgteams.envs.render_style import (
    BACKGROUND,
    BUBBLE,
    DOOR_CLOSED,
    DOOR_EDGE,
    GOAL_OUTLINE,
    MARKER_COLORS,
    Text,
    agent_color,
    shade,
    text_color_on,
)
from orgteams.envs.render_style import WALL as WALL_COLOR
from orgteams.envs.state import HouseholdState

BUBBLE_FONT = 13


def draw_static(pg: Any, text: Text, layout: Layout, cell: int):
    """The layout's unchanging picture: outside, walls, tinted floors, room names."""
    h, w = layout.tiles.shape
    surf = pg.Surface((w * cell, h * cell))
    surf.fill(BACKGROUND)
    cat = load_catalog()
    tints = [cat.room_colors[room_type(n)] for n in layout.rooms]
    for r in range(h):
        for c in range(w):
            tile = layout.tiles[r, c]
            rect = pg.Rect(c * cell, r * cell, cell, cell)
            if tile == OUTSIDE:
                continue
            if tile == WALL:
                pg.draw.rect(surf, WALL_COLOR, rect)
                continue
            room = layout.room_map[r, c]
            tint = tints[room] if room >= 0 else (225, 225, 225)
            pg.draw.rect(surf, tint, rect)
            if tile in (FLOOR, FURNITURE):
                pg.draw.rect(surf, shade(tint, 0.95), rect, 1)
    _draw_room_names(pg, text, surf, layout, cell, tints)
    return surf


def _draw_room_names(pg, text: Text, surf, layout: Layout, cell: int, tints) -> None:
    size = max(12, min(20, cell // 2))
    for i, name in enumerate(layout.rooms):
        cells = np.argwhere((layout.room_map == i) & (layout.tiles == FLOOR))
        if not len(cells):
            continue
        # Label the row with the most free floor, nearest the middle: furniture and
        # one-row hallways must not hide the name.
        rows, counts = np.unique(cells[:, 0], return_counts=True)
        mid = (rows.min() + rows.max()) / 2
        best = max(range(len(rows)), key=lambda k: (counts[k], -abs(rows[k] - mid)))
        middle = rows[best]
        cols = cells[cells[:, 0] == middle][:, 1]
        x = int((cols.min() + cols.max() + 1) * cell / 2)
        y = int((middle + 0.5) * cell)
        label = name.replace("_", " ")
        color = shade(tints[i], 0.62)
        if text.width(label, size, True) > (cols.max() - cols.min() + 1) * cell:
            label = label.split(" ")[0]
        text.blit(surf, label, (x, y), size, color, bold=True, anchor="center")


def icon(pg: Any, text: Text, target, cls: str, rect) -> None:
    """An object icon: a rounded tile in the class colour with its two-letter glyph."""
    cat = load_catalog()
    color = cat.object_colors.get(cls, (200, 200, 200))
    radius = max(2, rect.width // 4)
    pg.draw.rect(target, color, rect, border_radius=radius)
    pg.draw.rect(target, shade(color, 0.55), rect, 1, border_radius=radius)
    if rect.width >= 15:
        size = max(10, int(rect.width * 0.72))
        text.blit(target, cat.object_glyphs.get(cls, cls[:2]), rect.center, size,
                  text_color_on(color), bold=True, anchor="center")


def _icon_grid(rect, n: int, pad: int):
    if n == 1:  # one object: centred, with the furniture still showing round it
        size = int(rect.width * 0.6)
        yield rect.centerx - size // 2, rect.centery - size // 2, size
        return
    cols = 2 if n <= 4 else 3
    inner = rect.inflate(-2 * pad, -2 * pad)
    size = (min(inner.width, inner.height) - (cols - 1)) // cols
    for k in range(n):
        r, c = divmod(k, cols)
        yield inner.x + c * (size + 1), inner.y + r * (size + 1), size


def draw_dynamic(pg: Any, text: Text, surf, state: HouseholdState, cell: int) -> None:
    """Doors, furniture (open/closed containers) and the objects on or in them."""
    scene = state.scene
    lay = scene.layout
    for i, door in enumerate(lay.doors):
        r, c = door.cell
        rect = pg.Rect(c * cell, r * cell, cell, cell)
        vertical = lay.tiles[r - 1, c] == WALL  # walls above and below: door in a vertical wall
        if state.door_open[i]:
            # Open: two short leaves against the jambs.
            t = max(2, cell // 10)
            if vertical:
                pg.draw.rect(surf, DOOR_CLOSED, (rect.x, rect.y, cell, t))
                pg.draw.rect(surf, DOOR_CLOSED, (rect.x, rect.bottom - t, cell, t))
            else:
                pg.draw.rect(surf, DOOR_CLOSED, (rect.x, rect.y, t, cell))
                pg.draw.rect(surf, DOOR_CLOSED, (rect.right - t, rect.y, t, cell))
        else:
            slab = rect.inflate(-cell // 2, 0) if vertical else rect.inflate(0, -cell // 2)
            pg.draw.rect(surf, DOOR_CLOSED, slab)
            pg.draw.rect(surf, DOOR_EDGE, slab, 2)
    targets = set().union(*scene.goal_targets) if scene.goal else set()
    cat = load_catalog().furniture
    for i, f in enumerate(lay.furniture):
        _draw_furniture(pg, text, surf, state, i, cat[f.type], cell, i in targets)


def _draw_furniture(pg, text: Text, surf, state, i, ftype, cell, is_target) -> None:
    r, c = state.scene.layout.furniture[i].cell
    rect = pg.Rect(c * cell, r * cell, cell, cell).inflate(-2, -2)
    body = ftype.color
    radius = max(2, cell // 8)
    objs = state.contents[i]
    classes = state.scene.object_class
    pg.draw.rect(surf, body, rect, border_radius=radius)
    pg.draw.rect(surf, shade(body, 0.6), rect, 2, border_radius=radius)
    if ftype.is_container and not state.container_open[i]:
        # Closed: two doors with handles; what is inside stays hidden, only counted.
        mid = rect.centerx
        pg.draw.line(surf, shade(body, 0.55), (mid, rect.y + 3), (mid, rect.bottom - 4), 2)
        hy = rect.centery
        for hx in (mid - max(3, cell // 10), mid + max(3, cell // 10) - 1):
            pg.draw.line(surf, shade(body, 0.4), (hx, hy - cell // 8), (hx, hy + cell // 8), 2)
        text.blit(surf, ftype.glyph, (rect.x + 3, rect.y + 1), max(10, cell // 3),
                  text_color_on(body), bold=True)
        if objs:
            text.blit(surf, str(len(objs)), (rect.right - 3, rect.bottom - 1),
                      max(10, cell // 3), text_color_on(body), bold=True, anchor="bottomright")
    else:
        if ftype.is_container:
            # Open: a dark inside framed by the body, so open and closed read apart.
            inner = rect.inflate(-max(4, cell // 6), -max(4, cell // 6))
            pg.draw.rect(surf, shade(body, 0.35), inner, border_radius=radius)
        if not objs:
            text.blit(surf, ftype.glyph, rect.center, max(11, cell // 2),
                      shade(body, 0.45), bold=True, anchor="center")
        pad = max(2, cell // 8) if ftype.is_container else max(2, cell // 12)
        for k, (x, y, size) in enumerate(_icon_grid(rect, min(len(objs), 9), pad)):
            icon(pg, text, surf, classes[objs[k]], pg.Rect(x, y, size, size))
    if is_target:
        pg.draw.rect(surf, GOAL_OUTLINE, rect.inflate(2, 2), 2, border_radius=radius + 1)


def draw_fov(pg: Any, surf, state: HouseholdState, cell: int, agents, cache: dict) -> None:
    """Dim what none of ``agents`` sees and tint each agent's visible rooms in its colour."""
    scene = state.scene
    lay = scene.layout
    views = [scene.view_of_cell[state.agent_pos[a]] for a in agents]
    seen: set[int] = set()
    for v in views:
        seen.update(scene.view_rooms(v))
    key = ("fog", frozenset(seen))
    if key not in cache:
        fog = pg.Surface(surf.get_size(), pg.SRCALPHA)
        mask = np.isin(lay.room_map, sorted(seen)) | (lay.tiles == WALL) | (lay.tiles == OUTSIDE)
        for r, c in np.argwhere(~mask):
            fog.fill((15, 18, 25, 115), (c * cell, r * cell, cell, cell))
        cache[key] = _cropped(fog)
    surf.blit(*cache[key])
    for a, v in zip(agents, views):
        key = ("tint", v, a)
        if key not in cache:
            tint = pg.Surface(surf.get_size(), pg.SRCALPHA)
            color = (*agent_color(a), 38)
            for r, c in np.argwhere(np.isin(lay.room_map, scene.view_rooms(v))):
                tint.fill(color, (c * cell, r * cell, cell, cell))
            cache[key] = _cropped(tint)
        surf.blit(*cache[key])


def _cropped(surface) -> tuple:
    """(smallest sub-surface with visible pixels, its position): cheaper alpha blits."""
    rect = surface.get_bounding_rect()
    return surface.subsurface(rect).copy(), rect.topleft


def draw_agents(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                names: list[str], overlay: Overlay | None) -> None:
    """Each agent as a numbered disc in its colour, its name, held objects and marker."""
    classes = state.scene.object_class
    label_size = max(11, min(15, cell // 3))
    for a, pos in enumerate(state.agent_pos):
        r, c = divmod(pos, state.scene.width)
        rect = pg.Rect(c * cell, r * cell, cell, cell)
        color = agent_color(a)
        radius = int(cell * (0.38 if cell >= 30 else 0.47))  # small cells: bigger discs
        pg.draw.circle(surf, (255, 255, 255), rect.center, radius + 2)
        pg.draw.circle(surf, color, rect.center, radius)
        text.blit(surf, str(a), rect.center, max(11, int(cell * 0.5)), text_color_on(color),
                  bold=True, anchor="center")
        size = max(8, int(cell * 0.42))
        for k, obj in enumerate(state.hands[a][:2]):
            # Held objects sit at the disc's right, clear of the name tag and marker.
            irect = pg.Rect(rect.right - size + 3, rect.y + 1 + k * (size + 1), size, size)
            pg.draw.rect(surf, (255, 255, 255), irect.inflate(2, 2), border_radius=size // 4)
            icon(pg, text, surf, classes[obj], irect)
        _name_tag(pg, text, surf, names[a], (rect.centerx, rect.y - 1), label_size, color)
        marker = overlay.markers.get(f"agent_{a}") if overlay else None
        if marker:
            _marker(pg, text, surf, marker, rect, label_size)


def _name_tag(pg, text: Text, surf, name: str, midbottom, size, color) -> None:
    label = text.render(name, size, (255, 255, 255), True)
    box = label.get_rect(midbottom=midbottom).inflate(6, 2)
    box.clamp_ip(surf.get_rect())
    pg.draw.rect(surf, shade(color, 0.7), box, border_radius=4)
    surf.blit(label, label.get_rect(center=box.center))


def _marker(pg, text: Text, surf, marker: str, rect, size) -> None:
    """A ring round the agent and a small label inside the bottom of its cell."""
    color = MARKER_COLORS.get(marker, (90, 90, 160))
    pg.draw.circle(surf, color, rect.center, int(rect.width * 0.38) + 3, 3)
    label = text.render(marker, max(9, size - 3), (255, 255, 255), True)
    box = label.get_rect(midbottom=(rect.centerx, rect.bottom + 2)).inflate(4, 0)
    box.clamp_ip(surf.get_rect())
    pg.draw.rect(surf, color, box, border_radius=4)
    surf.blit(label, label.get_rect(center=box.center))


def layout_bubbles(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                   overlay: Overlay, names: list[str], index: dict[str, int]) -> list[tuple]:
    """Place each agent's latest message as a speech bubble above (or below) it.

    Returns ``(box, tail, lines, color)`` per bubble: tails are drawn under the
    agents (:func:`draw_tails`) and boxes over them (:func:`draw_bubbles`).
    """
    placed: list[Any] = []
    out = []
    bounds = surf.get_rect()
    w = state.scene.width
    obstacles = [pg.Rect((p % w) * cell, (p // w) * cell, cell, cell).inflate(4, 4)
                 for p in state.agent_pos]
    size = BUBBLE_FONT
    max_w = min(240, max(140, bounds.width // 3))
    for sender, msg in sorted(overlay.latest.items()):
        a = index.get(sender)
        if a is None or a >= len(state.agent_pos):
            continue
        r, c = divmod(state.agent_pos[a], w)
        anchor = (c * cell + cell // 2, r * cell)
        to = _receivers(msg.audience, names, index, len(state.agent_pos))
        lines = text.wrap(f"{to}{msg.text}", size, max_w - 12, max_lines=3)
        width = max(text.width(s, size) for s in lines) + 12
        height = len(lines) * text.font(size).get_linesize() + 8
        box = _place(pg, (width, height), anchor, cell, bounds, placed + obstacles)
        placed.append(box)
        above = box.bottom <= anchor[1]
        tail_y = box.bottom - 2 if above else box.top + 2
        # The tail stops at the name tag (above) or the cell edge (below).
        tip = (anchor[0], anchor[1] - 14 if above else anchor[1] + cell + 2)
        base_x = min(max(anchor[0], box.x + 10), box.right - 10)
        tail = [(base_x - 6, tail_y), (base_x + 6, tail_y), tip]
        out.append((box, tail, lines, agent_color(a)))
    return out


def draw_tails(pg: Any, surf, bubbles: list[tuple]) -> None:
    for _, tail, _, color in bubbles:
        pg.draw.polygon(surf, BUBBLE, tail)
        pg.draw.polygon(surf, color, tail, 2)


def draw_bubbles(pg: Any, text: Text, surf, bubbles: list[tuple]) -> None:
    step = text.font(BUBBLE_FONT).get_linesize()
    for box, _, lines, color in bubbles:
        pg.draw.rect(surf, BUBBLE, box, border_radius=7)
        pg.draw.rect(surf, color, box, 2, border_radius=7)
        for k, line in enumerate(lines):
            text.blit(surf, line, (box.x + 6, box.y + 4 + k * step), BUBBLE_FONT, (25, 25, 30))


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
    ids = [index[x] for x in receivers if x in index]
    if not receivers or len(ids) >= n - 1:
        return ""  # a broadcast needs no address
    return "@" + ",".join(names[i] for i in ids) + ": "
