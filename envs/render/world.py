"""Drawing the house: a cached static layer, then furniture, objects and agents per frame.

The static layer (outside, walls, room floors) depends only on the layout and the
cell size, so it is drawn once and blitted every frame. Room names are drawn per
frame on a row of their room where no agent stands (:func:`draw_room_names`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from orgteams.envs.core.catalog import load_catalog, room_type
from orgteams.envs.core.layout import FLOOR, FURNITURE, OUTSIDE, WALL, Layout
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.overlay import Overlay
from orgteams.envs.render.sight import REMEMBERED_VEIL, UNSEEN_VEIL, Known
from orgteams.envs.render.style import (
    BACKGROUND,
    DOOR_CLOSED,
    DOOR_EDGE,
    GOAL_OUTLINE,
    MARKER_COLORS,
    ROLE_COLORS,
    YOU_COLOR,
    Text,
    agent_color,
    drawable,
    shade,
    text_color_on,
)
from orgteams.envs.render.style import WALL as WALL_COLOR


def draw_static(pg: Any, text: Text, layout: Layout, cell: int):
    """The layout's unchanging picture: outside, walls, tinted floors."""
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
    return surf


def room_label_spots(text: Text, layout: Layout, cell: int) -> list[list[tuple]]:
    """Per room, where its name may go, best first: ``(row, first col, last col, x, label)``.

    Rows with the most free floor, nearest the middle, come first: furniture and
    one-row hallways must not hide the name."""
    size = max(12, min(20, cell // 2))
    out = []
    for i, name in enumerate(layout.rooms):
        cells = np.argwhere((layout.room_map == i) & (layout.tiles == FLOOR))
        spots = []
        if len(cells):
            rows, counts = np.unique(cells[:, 0], return_counts=True)
            mid = (rows.min() + rows.max()) / 2
            for k in sorted(range(len(rows)), key=lambda k: (-counts[k], abs(rows[k] - mid))):
                cols = cells[cells[:, 0] == rows[k]][:, 1]
                label = name.replace("_", " ")
                if text.width(label, size, True) > (cols.max() - cols.min() + 1) * cell:
                    label = label.split(" ")[0]
                x = int((cols.min() + cols.max() + 1) * cell / 2)
                spots.append((int(rows[k]), int(cols.min()), int(cols.max()), x, label))
        out.append(spots[:6])
    return out


def draw_room_names(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                    spots: list[list[tuple]], agents: list[int] | None = None,
                    tags: list = ()) -> list:
    """Each room's name where no agent (or its name tag) covers it: on its best row, in
    the widest stretch of that row no agent stands on (a one-row storage room full of
    agents still shows its name between them). Returns where the names went (speech
    bubbles keep clear of them). ``agents``: the agents drawn (default all; a hidden
    agent must not move a name, which would tell where it is); ``tags``: the name tags'
    boxes (:func:`place_name_tags`), wherever they went."""
    size = max(12, min(20, cell // 2))
    w = state.scene.width
    drawn = range(len(state.agent_pos)) if agents is None else agents
    taken = {divmod(state.agent_pos[a], w) for a in drawn}
    # A name tag mostly sits on the row above, about three cells wide...
    taken |= {(r - 1, c + d) for r, c in taken for d in (-1, 0, 1)}
    # ... but one pushed below or beside its agent covers other cells.
    for box in tags:
        taken |= {(r, c) for r in range(box.top // cell, (box.bottom - 1) // cell + 1)
                  for c in range(box.left // cell, (box.right - 1) // cell + 1)}
    # Furniture inside a row is no room for a name either ('kit[K]en').
    taken |= _furniture_cells(state.scene.layout)
    tints = load_catalog().room_colors
    drawn = []
    for i, room_spots in enumerate(spots):
        if not room_spots:
            continue
        choice, widest = None, None
        for row, c0, c1, x, label in room_spots:
            need = text.width(label, size, True) + 4
            start, end = _widest_free_run(row, c0, c1, taken)
            if (end - start + 1) * cell >= need:
                choice = (row, int((start + end + 1) * cell / 2), label)
                break
            if widest is None or end - start > widest[0]:
                widest = (end - start, (row, x, label) if end < start else
                          (row, int((start + end + 1) * cell / 2), label))
        # No row free for the whole name: the widest free stretch any row has (the best
        # row, centred, when none has any), so that it covers as few agents as it can.
        row, x, label = choice or widest[1]
        color = shade(tints[room_type(state.scene.layout.rooms[i])], 0.62)
        drawn.append(text.blit(surf, label, (x, int((row + 0.5) * cell)), size, color,
                               bold=True, anchor="center"))
    return drawn


def _furniture_cells(layout: Layout) -> set[tuple[int, int]]:
    """(row, col) of every furniture cell of ``layout``."""
    return {(int(r), int(c)) for r, c in np.argwhere(layout.tiles == FURNITURE)}


def _widest_free_run(row: int, c0: int, c1: int, taken: set) -> tuple[int, int]:
    """The longest run of columns in ``c0..c1`` of ``row`` not in ``taken`` (start, end);
    an empty run is ``(c0, c0 - 1)``."""
    best, start = (c0, c0 - 1), None
    for c in range(c0, c1 + 2):
        free = c <= c1 and (row, c) not in taken
        if free and start is None:
            start = c
        elif not free and start is not None:
            if c - start > best[1] - best[0] + 1:
                best = (start, c - 1)
            start = None
    return best


BADGE_ALL_BELOW = 10  # from this many agents the most common role has no badge
MIN_ICON = 12  # pixels: below this an object icon is an unreadable square


def icon(pg: Any, text: Text, target, cls: str, rect) -> None:
    """An object icon: a rounded tile in the class colour with its glyph (two letters,
    one on small icons), so that no icon is a bare square."""
    cat = load_catalog()
    color = cat.object_colors.get(cls, (200, 200, 200))
    radius = max(2, rect.width // 4)
    pg.draw.rect(target, color, rect, border_radius=radius)
    pg.draw.rect(target, shade(color, 0.55), rect, 1, border_radius=radius)
    glyph = cat.object_glyphs.get(cls, cls[:2])
    if rect.width < 15:
        glyph = glyph[:1]
    # Wide letters ('wn') at 72% of the tile ran past it into the neighbour's: the size
    # shrinks to fit, down to 9 px, and then only one letter is kept.
    size = _fitting(text, glyph, rect.width, 0.72 if len(glyph) > 1 else 0.85)
    if text.width(glyph, size, bold=True) > rect.width - 2:
        glyph = glyph[:1]
        size = _fitting(text, glyph, rect.width, 0.85)
    text.blit(target, glyph, rect.center, size, text_color_on(color), bold=True,
              anchor="center")


def _fitting(text: Text, glyph: str, width: int, share: float) -> int:
    """The font size of ``glyph`` on a tile ``width`` wide: ``share`` of it, less until
    the bold letters fit inside the tile's outline (9 px at least)."""
    size = max(9, int(width * share))
    while size > 9 and text.width(glyph, size, bold=True) > width - 2:
        size -= 1
    return size


def _more(pg, text: Text, target, rect, n: int) -> None:
    """A '+n' tile for objects that do not fit."""
    pg.draw.rect(target, (250, 250, 250), rect, border_radius=3)
    pg.draw.rect(target, (60, 60, 70), rect, 1, border_radius=3)
    text.blit(target, f"+{n}", rect.center, max(9, int(rect.width * 0.6)), (30, 30, 35),
              bold=True, anchor="center")


def _icon_grid(rect, n: int, pad: int):
    """``(x, y, size)`` slots for ``n`` icons on ``rect``, none smaller than MIN_ICON
    (fewer slots then: the caller shows the rest as '+k')."""
    if n == 1:  # one object: centred, with the furniture still showing round it
        size = min(max(int(rect.width * 0.6), MIN_ICON), rect.width)
        yield rect.centerx - size // 2, rect.centery - size // 2, size
        return
    inner = rect.inflate(-2 * pad, -2 * pad)
    cols = 2 if n <= 4 else 3
    while cols > 1 and (min(inner.width, inner.height) - (cols - 1)) // cols < MIN_ICON:
        cols -= 1
    size = max((min(inner.width, inner.height) - (cols - 1)) // cols, MIN_ICON)
    if cols == 1:  # a tiny cell: one icon in the middle, the rest counted
        size = min(max(int(rect.width * 0.6), MIN_ICON), rect.width)
        inner = rect.inflate(-(rect.width - size), -(rect.height - size))
    for k in range(min(n, cols * cols)):
        r, c = divmod(k, cols)
        yield inner.x + c * (size + 1), inner.y + r * (size + 1), size


def draw_dynamic(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                 known: Known | None = None) -> None:
    """Doors, furniture (open/closed containers) and the objects on or in them; with
    ``known`` (one agent's view, :mod:`~orgteams.envs.render.sight`) only what it knows."""
    scene = state.scene
    lay = scene.layout
    for i, door in enumerate(lay.doors):
        r, c = door.cell
        rect = pg.Rect(c * cell, r * cell, cell, cell)
        vertical = lay.tiles[r - 1, c] == WALL  # walls above and below: door in a vertical wall
        if known is not None and i in known.unknown_doors:
            # Out of view: a door is there (the floor plan), open or closed is not known.
            slab = rect.inflate(-cell // 2, 0) if vertical else rect.inflate(0, -cell // 2)
            pg.draw.rect(surf, DOOR_EDGE, slab, 1)
        elif state.door_open[i]:
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
    hidden = known.hidden_furniture if known is not None else frozenset()
    uncounted = known.uncounted if known is not None else frozenset()
    for i, f in enumerate(lay.furniture):
        if i not in hidden:
            _draw_furniture(pg, text, surf, state, i, cat[f.type], cell, i in targets,
                            i not in uncounted)


def draw_veils(pg: Any, surf, state: HouseholdState, cell: int, known: Known,
               cache: dict) -> None:
    """A light veil over the rooms ``known`` only remembers, a dark one over rooms never
    seen (:mod:`~orgteams.envs.render.sight`)."""
    lay = state.scene.layout
    seen = frozenset(known.seen_rooms)
    key = ("veil", known.visible_rooms, seen)
    if key not in cache:
        veil = pg.Surface(surf.get_size(), pg.SRCALPHA)
        rooms = lay.room_map
        for r, c in np.argwhere(rooms >= 0):
            room = int(rooms[r, c])
            if room in known.visible_rooms:
                continue
            veil.fill(REMEMBERED_VEIL if room in seen else UNSEEN_VEIL,
                      (c * cell, r * cell, cell, cell))
        for d in known.unknown_doors:  # as the rooms they join: remembered, else unseen
            door = lay.doors[d]
            r, c = door.cell
            veil.fill(REMEMBERED_VEIL if set(door.rooms) & seen else UNSEEN_VEIL,
                      (c * cell, r * cell, cell, cell))
        if len(cache) > 64:
            cache.clear()
        cache[key] = _cropped(veil)
    surf.blit(*cache[key])


def _draw_furniture(pg, text: Text, surf, state, i, ftype, cell, is_target,
                    counted: bool = True) -> None:
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
        if objs and counted:
            text.blit(surf, str(len(objs)), (rect.right - 3, rect.bottom - 1),
                      max(10, cell // 3), text_color_on(body), bold=True, anchor="bottomright")
    else:
        if ftype.is_container:
            # Open: a light inside framed by a dark rim, so open and closed read apart
            # and what lies inside stays readable.
            inner = rect.inflate(-max(4, cell // 6), -max(4, cell // 6))
            pg.draw.rect(surf, shade(body, 1.6), inner, border_radius=radius)
            pg.draw.rect(surf, shade(body, 0.45), inner, 2, border_radius=radius)
        if not objs:
            text.blit(surf, ftype.glyph, rect.center, max(11, cell // 2),
                      shade(body, 0.45), bold=True, anchor="center")
        pad = max(2, cell // 8) if ftype.is_container else max(2, cell // 12)
        slots = list(_icon_grid(rect, min(len(objs), 9), pad))
        for k, (x, y, size) in enumerate(slots):
            box = pg.Rect(x, y, size, size)
            if k == len(slots) - 1 and len(objs) > len(slots):
                _more(pg, text, surf, box, len(objs) - k)
            else:
                icon(pg, text, surf, classes[objs[k]], box)
        if objs:  # the furniture's letter stays readable on a chip in its corner
            _chip(pg, text, surf, ftype.glyph, rect.topleft, max(9, cell // 4), body)
    if is_target:
        pg.draw.rect(surf, GOAL_OUTLINE, rect.inflate(2, 2), 2, border_radius=radius + 1)
        # A star: this furniture counts for the goal (every one of its type does).
        _chip(pg, text, surf, "\u2605", rect.topright, max(9, cell // 4), GOAL_OUTLINE,
              anchor="topright")


def _chip(pg, text: Text, surf, label: str, corner, size: int, color, anchor="topleft"):
    """A small filled tag with ``label`` at a corner of a furniture cell."""
    img = text.render(label, size, text_color_on(color), True)
    box = img.get_rect(**{anchor: corner}).inflate(2, 0)
    pg.draw.rect(surf, color, box, border_radius=3)
    pg.draw.rect(surf, shade(color, 0.5), box, 1, border_radius=3)
    surf.blit(img, img.get_rect(center=box.center))


def draw_fov(pg: Any, surf, state: HouseholdState, cell: int, agents, cache: dict,
             fog: bool = True) -> None:
    """Dim what none of ``agents`` sees (unless not ``fog``: the map is veiled already)
    and tint each agent's visible rooms in its colour."""
    scene = state.scene
    lay = scene.layout
    views = [scene.view_of_cell[state.agent_pos[a]] for a in agents]
    seen: set[int] = set()
    for v in views:
        seen.update(scene.view_rooms(v))
    key = ("fog", frozenset(seen))
    if fog and key not in cache:
        dim = pg.Surface(surf.get_size(), pg.SRCALPHA)
        mask = np.isin(lay.room_map, sorted(seen)) | (lay.tiles == WALL) | (lay.tiles == OUTSIDE)
        for r, c in np.argwhere(~mask):
            dim.fill((15, 18, 25, 115), (c * cell, r * cell, cell, cell))
        cache[key] = _cropped(dim)
    if fog:
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


def label_size_for(cell: int) -> int:
    return max(11, min(15, cell // 3))


def _tag_name(names: list[str], a: int, overlay: Overlay | None) -> str:
    you = overlay is not None and overlay.you == f"agent_{a}"
    return names[a] + (" (YOU)" if you else "")


def agent_rect(pg: Any, state: HouseholdState, a: int, cell: int):
    """The cell of agent ``a`` in map pixels."""
    r, c = divmod(state.agent_pos[a], state.scene.width)
    return pg.Rect(c * cell, r * cell, cell, cell)


def object_cells(pg: Any, state: HouseholdState, cell: int, around: list[int] | None = None,
                 reach: int = 1) -> list:
    """Furniture cells a label must not hide: every goal furniture, every furniture with
    objects on or in it, and any furniture within ``reach`` cells of the agents ``around``
    (None: of every agent)."""
    scene = state.scene
    w = scene.width
    marked = set(set().union(*scene.goal_targets)) if scene.goal else set()
    marked.update(f for f, objs in enumerate(state.contents) if objs)
    agents = range(len(state.agent_pos)) if around is None else around
    at = scene.furniture_at
    for a in agents:
        r, c = divmod(state.agent_pos[a], w)
        for dr in range(-reach, reach + 1):
            for dc in range(-reach, reach + 1):
                f = at.get((r + dr) * w + c + dc)
                if f is not None and 0 <= c + dc < w:
                    marked.add(f)
    lay = scene.layout
    return [pg.Rect(lay.furniture[f].cell[1] * cell, lay.furniture[f].cell[0] * cell, cell, cell)
            for f in sorted(marked)]


def place_name_tags(pg: Any, text: Text, state: HouseholdState, cell: int,
                    names: list[str], overlay: Overlay | None, bounds,
                    agents: list[int] | None = None, keep: set[int] = frozenset(),
                    avoid: list = (), drawn: list[int] | None = None) -> dict[int, Any]:
    """Where each agent's name tag goes: agent index -> box.

    ``agents`` get a tag, in that order (default: all); each goes above its cell,
    else below, else beside it, where it covers no tag placed before, no agent and
    nothing in ``avoid`` (goal furniture, objects next to agents). An agent that finds
    no free spot goes without a tag, unless it is in ``keep`` (you, the agent picked):
    then its tag goes above all the same. ``drawn``: the agents on the map (default
    all; a hidden one must not push a tag aside, which would tell where it is)."""
    size = label_size_for(cell)
    agents = list(range(len(state.agent_pos))) if agents is None else agents
    drawn = range(len(state.agent_pos)) if drawn is None else drawn
    discs = {a: agent_rect(pg, state, a, cell).inflate(-2, -2) for a in drawn}
    placed: dict[int, Any] = {}
    blocked = list(avoid)
    for a in agents:
        x, y = agent_rect(pg, state, a, cell).midtop
        tw, th = text.font(size, True).size(drawable(_tag_name(names, a, overlay)))
        box = pg.Rect(0, 0, tw + 6, th + 2)
        spots = []
        for anchor, at in (("midbottom", (x, y - 1)), ("midtop", (x, y + cell + 1)),
                           ("midleft", (x + cell // 2 + 1, y + cell // 2)),
                           ("midright", (x - cell // 2 - 1, y + cell // 2))):
            spot = box.copy()
            setattr(spot, anchor, at)
            spots.append(spot.clamp(bounds))
        others = blocked + [d for b, d in discs.items() if b != a]
        choice = next((b for b in spots if b.collidelist(others) < 0), None)
        if choice is None and a in keep:
            choice = spots[0]
        if choice is not None:
            placed[a] = choice
            blocked.append(choice)
    return placed


def draw_agents(pg: Any, text: Text, surf, state: HouseholdState, cell: int,
                names: list[str], overlay: Overlay | None, tags: dict[int, Any],
                agents: list[int] | None = None) -> None:
    """Each agent (of ``agents``, default all) as a numbered disc in its colour, its
    name (at ``tags``, from :func:`place_name_tags`; agents without one go untagged),
    held objects, role badge and marker; the agent a person plays is ringed and tagged
    YOU."""
    classes = state.scene.object_class
    label_size = label_size_for(cell)
    roles = overlay.roles if overlay else {}
    you = overlay.you if overlay else None
    # In a big team the most common role (members) goes without a badge: only the few
    # that differ (leaders, vice leaders) stand out.
    plain_role = Counter(roles.values()).most_common(1)[0][0] if (
        roles and len(state.agent_pos) >= BADGE_ALL_BELOW) else None
    for a in range(len(state.agent_pos)) if agents is None else agents:
        rect = agent_rect(pg, state, a, cell)
        color = agent_color(a)
        radius = int(cell * (0.38 if cell >= 30 else 0.47))  # small cells: bigger discs
        if you == f"agent_{a}":
            pg.draw.circle(surf, (20, 20, 20), rect.center, radius + 7)
            pg.draw.circle(surf, YOU_COLOR, rect.center, radius + 5)
        pg.draw.circle(surf, (255, 255, 255), rect.center, radius + 2)
        pg.draw.circle(surf, color, rect.center, radius)
        digits = max(11, int(cell * 0.5)) if a < 100 else max(9, int(cell * 0.36))
        text.blit(surf, str(a), rect.center, digits, text_color_on(color), bold=True,
                  anchor="center")
        size = max(MIN_ICON, int(cell * 0.42))
        for k, obj in enumerate(state.hands[a][:2]):
            # Held objects sit at the disc's right, clear of the name tag and marker.
            irect = pg.Rect(rect.right - size + 3, rect.y + 1 + k * (size + 1), size, size)
            pg.draw.rect(surf, (255, 255, 255), irect.inflate(2, 2), border_radius=size // 4)
            icon(pg, text, surf, classes[obj], irect)
        if a in tags:
            _name_tag(pg, text, surf, _tag_name(names, a, overlay), tags[a], label_size, color)
        role = roles.get(f"agent_{a}")
        if role and role != plain_role:
            _role_badge(pg, text, surf, role, rect, label_size)
        marker = overlay.markers.get(f"agent_{a}") if overlay else None
        if marker:
            _marker(pg, text, surf, marker, rect, label_size)


def _role_badge(pg, text: Text, surf, role: str, rect, size) -> None:
    """The role's initial (L leader, V vice leader, M member...) at the cell's bottom left."""
    color = ROLE_COLORS.get(role, (235, 235, 240))
    letter = ("V" if role.startswith("vice") else role[:1]).upper()
    img = text.render(letter, max(9, size - 2), text_color_on(color), True)
    box = img.get_rect(bottomleft=(rect.x - 2, rect.bottom + 1)).inflate(4, 0)
    box.clamp_ip(surf.get_rect())
    pg.draw.rect(surf, color, box, border_radius=4)
    pg.draw.rect(surf, (40, 40, 45), box, 1, border_radius=4)
    surf.blit(img, img.get_rect(center=box.center))


def _name_tag(pg, text: Text, surf, name: str, box, size, color) -> None:
    label = text.render(name, size, (255, 255, 255), True)
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
