"""The side panel: title, tick counter, goals with progress, the team, the message log.

Also the centred help box that the keyboard play loop shows on demand.
"""

from __future__ import annotations

from typing import Any

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.overlay import Overlay
from orgteams.envs.render.style import (
    DONE_GREEN,
    MARKER_COLORS,
    PANEL,
    PANEL_MUTED,
    PANEL_RULE,
    PANEL_TEXT,
    Text,
    agent_color,
)
from orgteams.envs.render.world import icon

PAD = 14
BODY = 15
SMALL = 13


class _Cursor:
    """Top-down layout helper: where the next line goes."""

    def __init__(self, pg: Any, text: Text, surf, x: int, y: int, width: int, bottom: int):
        self.pg, self.text, self.surf = pg, text, surf
        self.x, self.y, self.width, self.bottom = x, y, width, bottom

    def line(self, s: str, size: int = BODY, color=PANEL_TEXT, bold: bool = False,
             indent: int = 0) -> None:
        self.text.blit(self.surf, s, (self.x + indent, self.y), size, color, bold)
        self.y += size + 4

    def header(self, s: str, right: str = "", right_color=PANEL_MUTED) -> None:
        self.y += 6
        self.pg.draw.line(self.surf, PANEL_RULE, (self.x, self.y), (self.x + self.width, self.y))
        self.y += 6
        self.text.blit(self.surf, s.upper(), (self.x, self.y), SMALL, PANEL_MUTED, True)
        if right:
            self.text.blit(self.surf, right, (self.x + self.width, self.y), SMALL, right_color,
                           True, anchor="topright")
        self.y += SMALL + 6


def draw_panel(pg: Any, text: Text, surf, state: HouseholdState, overlay: Overlay | None,
               names: list[str], footer: list[str]) -> None:
    """Fill ``surf`` (the panel area) with the episode's state."""
    surf.fill(PANEL)
    w, h = surf.get_size()
    cur = _Cursor(pg, text, surf, PAD, PAD, w - 2 * PAD, h - PAD)
    scene = state.scene
    for s in text.wrap(scene.task.replace("_", " "), 17, cur.width, 2):
        cur.line(s, 17, bold=True)
    if overlay is not None and overlay.organization:
        cur.line(f"organization: {overlay.organization}", BODY, (120, 70, 20), bold=True)
    done = state.success
    status = "goal complete" if done else f"tick {state.tick} / {scene.step_limit}"
    rect = text.blit(surf, status, (cur.x, cur.y), BODY, DONE_GREEN if done else PANEL_TEXT,
                     bold=True)
    text.blit(surf, f"in the {scene.layout.name}", (rect.right + 8, cur.y), BODY, PANEL_MUTED)
    cur.y += BODY + 4
    if overlay is not None and overlay.caption:
        for s in text.wrap(overlay.caption, BODY, cur.width, 2):
            cur.line(s, BODY, (70, 90, 150), bold=True)
    _goals(cur, state)
    _team(cur, state, names, overlay)
    footer_h = len(footer) * (SMALL + 3)
    bottom = h - PAD - footer_h
    legend_h = _legend_height(state)
    if overlay is not None and overlay.log:
        _messages(cur, overlay, names, bottom)  # messages first; the legend if room is left
    elif overlay is not None and bottom - cur.y > legend_h + 60:
        _messages(cur, overlay, names, bottom)
    if bottom - cur.y >= legend_h:
        cur.y = bottom - legend_h
        _legend(cur, state)
    for k, s in enumerate(footer):
        text.blit(surf, s, (PAD, h - PAD - footer_h + k * (SMALL + 3)), SMALL, PANEL_MUTED)


def _goals(cur: _Cursor, state: HouseholdState) -> None:
    pg = cur.pg
    goal = state.scene.goal
    units = sum(p.count for p in goal)
    have = sum(state.progress)
    cur.header("goal", f"{have}/{units} done", DONE_GREEN if have == units else PANEL_MUTED)
    targets = state.scene.goal_targets
    for k, (pred, got) in enumerate(zip(goal, state.progress)):
        complete = got >= pred.count
        box = pg.Rect(cur.x, cur.y + 1, 14, 14)
        pg.draw.rect(cur.surf, DONE_GREEN if complete else (255, 255, 255), box, border_radius=3)
        pg.draw.rect(cur.surf, DONE_GREEN if complete else PANEL_MUTED, box, 1, border_radius=3)
        if complete:
            pg.draw.lines(cur.surf, (255, 255, 255), False,
                          [(box.x + 3, box.y + 7), (box.x + 6, box.y + 10),
                           (box.x + 11, box.y + 3)], 2)
        icon(pg, cur.text, cur.surf, pred.cls, pg.Rect(cur.x + 20, cur.y, 17, 17))
        where = "in" if pred.relation == "inside" else "on"
        label = f"{pred.cls} {where} {pred.target}".replace("_", " ")
        count = len(targets[k])
        if count > 1:  # several of that furniture: any of them counts (all starred)
            label = f"{pred.cls} {where} any {pred.target} ({count})".replace("_", " ")
        color = PANEL_MUTED if complete else PANEL_TEXT
        cur.text.blit(cur.surf, label, (cur.x + 43, cur.y + 1), BODY, color)
        cur.text.blit(cur.surf, f"{got}/{pred.count}", (cur.x + cur.width, cur.y + 1), BODY,
                      DONE_GREEN if complete else PANEL_TEXT, True, anchor="topright")
        cur.y += 21


def _team(cur: _Cursor, state: HouseholdState, names: list[str], overlay) -> None:
    pg = cur.pg
    cur.header("team")
    classes = state.scene.object_class
    rooms = state.scene.layout.rooms
    for a, pos in enumerate(state.agent_pos):
        if cur.y > cur.bottom - 60:
            cur.line(f"... and {len(state.agent_pos) - a} more", SMALL, PANEL_MUTED)
            break
        color = agent_color(a)
        pg.draw.circle(cur.surf, color, (cur.x + 8, cur.y + 9), 8)
        cur.text.blit(cur.surf, str(a), (cur.x + 8, cur.y + 9), 12, (255, 255, 255), True,
                      anchor="center")
        x = cur.x + 22
        rect = cur.text.blit(cur.surf, names[a], (x, cur.y + 1), BODY, PANEL_TEXT, True)
        room = state.scene.room_of_cell[pos]
        where = rooms[room].replace("_", " ") if room >= 0 else "doorway"
        rect = cur.text.blit(cur.surf, where, (rect.right + 6, cur.y + 2), SMALL, PANEL_MUTED)
        role = overlay.roles.get(f"agent_{a}") if overlay else None
        if role:
            rect = cur.text.blit(cur.surf, role.replace("_", " "), (rect.right + 6, cur.y + 2),
                                 SMALL, (120, 70, 20), True)
        if overlay is not None and overlay.you == f"agent_{a}":
            rect = cur.text.blit(cur.surf, "YOU", (rect.right + 6, cur.y + 2), SMALL,
                                 (200, 140, 0), True)
        marker = overlay.markers.get(f"agent_{a}") if overlay else None
        if marker:
            cur.text.blit(cur.surf, marker, (rect.right + 6, cur.y + 2), SMALL,
                          MARKER_COLORS.get(marker, (90, 90, 160)), True)
        x = cur.x + cur.width - 17
        for obj in reversed(state.hands[a]):
            icon(pg, cur.text, cur.surf, classes[obj], pg.Rect(x, cur.y, 17, 17))
            x -= 20
        cur.y += 22


def _messages(cur: _Cursor, overlay: Overlay, names: list[str], bottom: int) -> None:
    index = {f"agent_{i}": i for i in range(len(names))}
    if not overlay.log:
        cur.header("messages")
        cur.line("no messages yet", SMALL, PANEL_MUTED)
        return
    # Newest at the bottom; drop the oldest that do not fit.
    blocks = []
    for msg in overlay.log:
        who = names[index[msg.sender]] if msg.sender in index else msg.sender
        if not msg.audience or len(msg.audience) >= len(names) - 1 > 1:
            to = "all"
        else:
            to = ", ".join(names[index[r]] if r in index else r for r in msg.audience)
        lines = cur.text.wrap(msg.text, SMALL, cur.width - 10, 3)
        blocks.append((msg.sender, f"{who} -> {to}", lines))
    heights = [SMALL + 4 + len(lines) * (SMALL + 2) + 4 for _, _, lines in blocks]
    room = bottom - cur.y - (SMALL + 18)  # less the header
    while blocks and sum(heights) > room:
        blocks.pop(0)
        heights.pop(0)
    cur.header("messages", f"latest {len(blocks)} of {len(overlay.log)}"
               if len(blocks) < len(overlay.log) else f"{len(blocks)}")
    for (sender, head, lines), _ in zip(blocks, heights):
        color = agent_color(index.get(sender, 0))
        top = cur.y
        cur.text.blit(cur.surf, head, (cur.x + 8, cur.y), SMALL, color, True)
        cur.y += SMALL + 4
        for s in lines:
            cur.text.blit(cur.surf, s, (cur.x + 8, cur.y), SMALL, PANEL_TEXT)
            cur.y += SMALL + 2
        cur.pg.draw.line(cur.surf, color, (cur.x + 2, top), (cur.x + 2, cur.y - 2), 3)
        cur.y += 4


def _legend_types(state: HouseholdState) -> list[tuple[str, str]]:
    cat = load_catalog().furniture
    types = {f.type for f in state.scene.layout.furniture}
    return sorted((cat[t].glyph, t.replace("_", " ")) for t in types)


def _legend_height(state: HouseholdState) -> int:
    return 24 + SMALL + ((len(_legend_types(state)) + 1) // 2) * (SMALL + 3)


def _legend(cur: _Cursor, state: HouseholdState) -> None:
    cur.header("furniture")
    items = _legend_types(state)
    half = (len(items) + 1) // 2
    col_w = cur.width // 2
    for k, (glyph, name) in enumerate(items):
        col, row = divmod(k, half)
        x, y = cur.x + col * col_w, cur.y + row * (SMALL + 3)
        cur.text.blit(cur.surf, glyph, (x, y), SMALL, PANEL_TEXT, True)
        cur.text.blit(cur.surf, name, (x + 20, y), SMALL, PANEL_MUTED)


def draw_help(pg: Any, text: Text, surf, lines: list[str]) -> None:
    """A centred, translucent box listing keys; ``"key\tmeaning"`` lines get two columns."""
    size = 16
    rows = [s.split("\t", 1) for s in lines]
    key_w = max((text.width(r[0], size, True) for r in rows if len(r) == 2), default=0) + 24
    width = max(key_w + text.width(r[1], size) if len(r) == 2 else text.width(r[0], size, True)
                for r in rows) + 40
    step = text.font(size).get_linesize() + 4
    box = pg.Rect(0, 0, width, len(rows) * step + 26)
    box.center = surf.get_rect().center
    shade_box = pg.Surface(box.size, pg.SRCALPHA)
    shade_box.fill((20, 22, 30, 230))
    surf.blit(shade_box, box)
    pg.draw.rect(surf, (200, 200, 210), box, 2, border_radius=6)
    for k, row in enumerate(rows):
        y = box.y + 13 + k * step
        if len(row) == 1:
            text.blit(surf, row[0], (box.x + 20, y), size, (255, 230, 150), True)
            continue
        text.blit(surf, row[0], (box.x + 20, y), size, (255, 230, 150), True)
        text.blit(surf, row[1], (box.x + 20 + key_w, y), size, (235, 235, 240))
