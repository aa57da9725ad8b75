"""The side panel: title, tick counter, goals with progress, the team, the message log.

It adapts to the team: up to :data:`LARGE_TEAM` - 1 agents each have a row; a larger
team is grouped by role with counts, beside a matrix of who messaged whom in the
latest round with messages, and only a few agents are listed (you, the agent picked
on the map, leaders, the latest speakers). The message log always keeps room
(:data:`MIN_LOG`). Footer lines wrap instead of running off the edge.

Also the centred help box that the keyboard play loop shows on demand.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.overlay import Overlay, Speech
from orgteams.envs.render.sight import Known
from orgteams.envs.render.style import (
    DONE_GREEN,
    MARKER_COLORS,
    PANEL,
    PANEL_MUTED,
    PANEL_RULE,
    PANEL_TEXT,
    Text,
    agent_color,
    text_color_on,
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


LARGE_TEAM = 10
"""From this many agents the team is grouped by role with counts, only chosen agents are
listed, and a matrix shows who messaged whom."""
MIN_LOG = 112  # pixels the message log keeps whatever the team's size (about two messages)
MAX_LISTED = 6  # agents listed by name in a large team
TALK_SIDE = 100  # pixels of the who-messaged-whom matrix
ROW = 22
FOOTER_LINES = 2  # a footer line wraps onto at most this many rows


@dataclass
class Focus:
    """Who the panel singles out: the agent picked on the map and what the person's agent
    knows (``orgteams play``)."""

    selected: int | None = None
    known: Known | None = None
    speakers: list[int] = field(default_factory=list)  # newest first
    pinned: list[Speech] = field(default_factory=list)  # kept in the log (no bubble)
    log_back: int = 0  # the newest messages scrolled past (the mouse wheel over the log)


@dataclass
class PanelLayout:
    """Where the panel put things (tests and tools read it)."""

    sections: dict[str, Any] = field(default_factory=dict)  # name -> pygame Rect
    listed: list[int] = field(default_factory=list)  # agents with a row in the team list
    messages: list[Speech] = field(default_factory=list)  # shown in the log
    footer: list[str] = field(default_factory=list)  # footer rows as drawn (wrapped)
    talk_note: list[str] = field(default_factory=list)  # a large team: the note by the matrix
    said: list[str] = field(default_factory=list)  # a large team: the picked agent's message


def draw_panel(pg: Any, text: Text, surf, state: HouseholdState, overlay: Overlay | None,
               names: list[str], footer: list[str], focus: Focus | None = None
               ) -> PanelLayout:
    """Fill ``surf`` (the panel area) with the episode's state; returns where things went.

    The message log always keeps :data:`MIN_LOG` pixels; the team list takes what is
    left (a large team: role counts, who messaged whom, a few agents by name); the
    furniture legend comes last, when there is room. Footer lines wrap."""
    focus = focus or Focus()
    out = PanelLayout()
    surf.fill(PANEL)
    w, h = surf.get_size()
    cur = _Cursor(pg, text, surf, PAD, PAD, w - 2 * PAD, h - PAD)
    scene = state.scene
    for s in text.wrap(scene.task.replace("_", " "), 17, cur.width, 2):
        cur.line(s, 17, bold=True)
    if overlay is not None and overlay.organization:
        for s in text.wrap(f"organization: {overlay.organization}", BODY, cur.width, 1):
            cur.line(s, BODY, (120, 70, 20), bold=True)
    done = state.success
    status = "goal complete" if done else f"tick {state.tick} / {scene.step_limit}"
    rect = text.blit(surf, status, (cur.x, cur.y), BODY, DONE_GREEN if done else PANEL_TEXT,
                     bold=True)
    text.blit(surf, f"in the {scene.layout.name}", (rect.right + 8, cur.y), BODY, PANEL_MUTED)
    cur.y += BODY + 4
    if overlay is not None and overlay.caption:
        for s in text.wrap(overlay.caption, BODY, cur.width, 2):
            cur.line(s, BODY, (70, 90, 150), bold=True)
    if focus.known is not None:
        _view_line(cur, state, focus.known)
    top = cur.y
    _goals(cur, state)
    out.sections["goal"] = pg.Rect(0, top, w, cur.y - top)
    rows = [r for s in footer for r in text.wrap(s, SMALL, cur.width, FOOTER_LINES)]
    footer_h = len(rows) * (SMALL + 3)
    bottom = h - PAD - footer_h
    top = cur.y
    if len(state.agent_pos) >= LARGE_TEAM:
        out.listed = _large_team(cur, state, names, overlay, focus, bottom - MIN_LOG, out)
    else:
        out.listed = _team(cur, state, names, overlay, focus, bottom - MIN_LOG)
    out.sections["team"] = pg.Rect(0, top, w, cur.y - top)
    top = cur.y
    legend_h = _legend_height(state)
    if overlay is not None:
        out.messages = _messages(cur, overlay, names, bottom, focus.pinned, focus.log_back)
        out.sections["messages"] = pg.Rect(0, top, w, cur.y - top)
    if bottom - cur.y >= legend_h:
        cur.y = bottom - legend_h
        top = cur.y
        _legend(cur, state)
        out.sections["legend"] = pg.Rect(0, top, w, cur.y - top)
    for k, s in enumerate(rows):
        text.blit(surf, s, (PAD, bottom + k * (SMALL + 3)), SMALL, PANEL_MUTED)
    out.footer = rows
    out.sections["footer"] = pg.Rect(0, bottom, w, footer_h)
    return out


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


def _view_line(cur: _Cursor, state: HouseholdState, known: Known) -> None:
    """What the person's agent sees now and what it only remembers."""
    rooms = state.scene.layout.rooms
    here = " and ".join(rooms[r].replace("_", " ") for r in sorted(known.visible_rooms))
    unseen = len(rooms) - len(known.visible_rooms) - len(known.seen_rooms)
    line = (f"you see the {here}; {len(known.seen_rooms)} room(s) remembered (faded), "
            f"{unseen} never seen (dark)")
    for s in cur.text.wrap(line, SMALL, cur.width, 2):
        cur.line(s, SMALL, (70, 90, 150))


def _agent_row(cur: _Cursor, state: HouseholdState, names: list[str], overlay, a: int,
               focus: Focus) -> None:
    """One agent: disc, name, room, role, YOU, marker, held objects (what may be known)."""
    pg = cur.pg
    color = agent_color(a)
    if a == focus.selected:  # the agent picked on the map
        pg.draw.rect(cur.surf, (255, 240, 190), (cur.x - 4, cur.y - 2, cur.width + 8, ROW - 1),
                     border_radius=4)
    pg.draw.circle(cur.surf, color, (cur.x + 8, cur.y + 9), 8)
    cur.text.blit(cur.surf, str(a), (cur.x + 8, cur.y + 9), 12 if a < 100 else 9,
                  text_color_on(color), True, anchor="center")
    seen = focus.known is None or focus.known.sees_agent(a)
    x = cur.x + 22
    rect = cur.text.blit(cur.surf, names[a], (x, cur.y + 1), BODY, PANEL_TEXT, True)
    room = state.scene.room_of_cell[state.agent_pos[a]]
    rooms = state.scene.layout.rooms
    where = ("not in view" if not seen else
             rooms[room].replace("_", " ") if room >= 0 else "doorway")
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
    if seen:
        x = cur.x + cur.width - 17
        for obj in reversed(state.hands[a]):
            icon(pg, cur.text, cur.surf, state.scene.object_class[obj], pg.Rect(x, cur.y, 17, 17))
            x -= 20
    cur.y += ROW


def _team(cur: _Cursor, state: HouseholdState, names: list[str], overlay, focus: Focus,
          limit: int) -> list[int]:
    """Every agent on a row, as many as fit above ``limit``."""
    cur.header("team")
    n = len(state.agent_pos)
    fit = max(1, (limit - cur.y) // ROW)
    shown = list(range(n)) if fit >= n else list(range(fit - 1))
    for a in shown:
        _agent_row(cur, state, names, overlay, a, focus)
    if len(shown) < n:
        cur.line(f"... and {n - len(shown)} more", SMALL, PANEL_MUTED)
    return shown


def role_groups(n: int, roles: dict[str, str]) -> list[tuple[str, list[int]]]:
    """The team by role, higher tiers first (fewer agents first, members last); agents
    without a role are grouped as ``""``."""
    groups: dict[str, list[int]] = {}
    for a in range(n):
        groups.setdefault(roles.get(f"agent_{a}") or "", []).append(a)
    return sorted(groups.items(), key=lambda kv: (kv[0] in ("", "member"), not is_lead(kv[0]),
                                                  len(kv[1]), kv[0]))


def is_lead(role: str | None) -> bool:
    """Leaders, vice leaders, coordinators: their name tags are always drawn."""
    return bool(role) and ("lead" in role or role == "coordinator")


def role_flows(talk: list[Speech], roles: dict[str, str], n: int) -> list[tuple[str, int]]:
    """Who messaged whom by role, most messages first: ``("member -> vice leader", 18)``;
    a message counts once for each role it reached, ``-> all`` when it reached the whole
    team (a broadcast)."""
    def role(agent: str) -> str:
        return (roles.get(agent) or "no role").replace("_", " ")

    flows: dict[str, int] = {}
    for m in talk:
        heard = set(m.audience) - {m.sender}
        if not m.audience or len(heard) >= n - 1:
            targets = ["all"]
        else:
            targets = sorted({role(r) for r in heard})
        for target in targets:
            key = f"{role(m.sender)} -> {target}"
            flows[key] = flows.get(key, 0) + 1
    return sorted(flows.items(), key=lambda kv: (-kv[1], kv[0]))


MAX_FLOWS = 3  # role-to-role flows named beside the matrix


def _large_team(cur: _Cursor, state: HouseholdState, names: list[str], overlay,
                focus: Focus, limit: int, out: PanelLayout | None = None) -> list[int]:
    """A large team: role counts, who messaged whom (a matrix, and by role in words),
    then a few agents by name (you, the picked one with what it said last, leaders, the
    latest speakers)."""
    out = out if out is not None else PanelLayout()
    n = len(state.agent_pos)
    roles = overlay.roles if overlay is not None else {}
    groups = role_groups(n, roles)
    cur.header("team", f"{n} agents")
    top = cur.y
    left = cur.width - TALK_SIDE - 12
    counts = " \u00b7 ".join(f"{role.replace('_', ' ') or 'no role'} {len(ids)}"
                             for role, ids in groups)
    y = cur.y
    for s in cur.text.wrap(counts, SMALL, left, 3):
        cur.text.blit(cur.surf, s, (cur.x, y), SMALL, PANEL_TEXT, True)
        y += SMALL + 4
    talk = overlay.this_round if overlay is not None else []
    senders = {m.sender for m in talk}
    if talk:
        note = f"round {talk[-1].round}: {len(talk)} message(s) from {len(senders)} of {n}"
        if len(groups) > 1:  # by role: what the matrix's cells are too small to say
            flows = role_flows(talk, roles, n)
            note += ": " + ", ".join(f"{k} {c}" for k, c in flows[:MAX_FLOWS])
            if len(flows) > MAX_FLOWS:
                note += f", {len(flows) - MAX_FLOWS} more"
        note += "; rows speak, columns hear"
    else:
        note = "no messages yet; rows speak, columns hear"
    out.talk_note = cur.text.wrap(note, SMALL, left, 6)
    for s in out.talk_note:
        cur.text.blit(cur.surf, s, (cur.x, y), SMALL, PANEL_MUTED)
        y += SMALL + 3
    talk_matrix(cur.pg, cur.surf, cur.pg.Rect(cur.x + cur.width - TALK_SIDE, top, TALK_SIDE,
                                              TALK_SIDE), talk, [ids for _, ids in groups],
                focus.selected)
    cur.y = max(y, top + TALK_SIDE) + 6
    you = overlay.you if overlay is not None else None
    wanted = [int(you[6:])] if you and you[6:].isdigit() and int(you[6:]) < n else []
    if focus.selected is not None:
        wanted.append(focus.selected)
    wanted += [a for role, ids in groups if is_lead(role) for a in ids[:2]]
    wanted += focus.speakers
    said = _said(cur, overlay, names, focus.selected)
    room = limit - cur.y - SMALL - 4 - len(said) * (SMALL + 2)
    fit = max(0, min(MAX_LISTED, room // ROW))
    listed = list(dict.fromkeys(wanted))[:fit]
    for a in listed:
        _agent_row(cur, state, names, overlay, a, focus)
        if a == focus.selected and said:
            # Bubbles rarely find room in a crowd: what the picked agent said last, on
            # its row's highlight.
            cur.pg.draw.rect(cur.surf, (255, 240, 190), (cur.x - 4, cur.y - 3, cur.width + 8,
                                                         len(said) * (SMALL + 2) + 3),
                             border_radius=4)
            for s in said:
                cur.text.blit(cur.surf, s, (cur.x + 22, cur.y - 3), SMALL, PANEL_TEXT)
                cur.y += SMALL + 2
            cur.y += 2
            out.said = said
    rest = n - len(listed)
    if rest:
        cur.line(f"{rest} more: point at one on the map", SMALL, PANEL_MUTED)
    return listed


def _said(cur: _Cursor, overlay, names: list[str], a: int | None) -> list[str]:
    """Up to two lines: the round, the receivers and the text of what agent ``a`` said
    last (none when it said nothing)."""
    m = overlay.latest.get(f"agent_{a}") if overlay is not None and a is not None else None
    if m is None:
        return []
    index = {f"agent_{i}": i for i in range(len(names))}
    heard = [r for r in m.audience if r != m.sender]
    if not m.audience or len(heard) >= len(names) - 1:
        to = "all"
    elif len(heard) > 2:
        to = f"{len(heard)} agents"
    else:
        to = ", ".join(names[index[r]] if r in index else r for r in heard)
    return cur.text.wrap(f"r{m.round} to {to}: {m.text}", SMALL, cur.width - 22, 2)


def talk_matrix(pg: Any, surf, box, talk: list[Speech], groups: list[list[int]],
                selected: int | None = None) -> list[list[int]]:
    """Who messaged whom: a square, rows the senders and columns the receivers, the team
    in ``groups`` (by role), darker for more messages. Agents share a cell when there are
    more agents than pixels allow (at least 2 per cell), never across groups: a leader
    keeps its own row and column beside 255 members; thin lines part the groups.
    Returns the counts."""
    groups = [g for g in groups if g]
    order = [a for g in groups for a in g]
    n = len(order)
    most_bins = max(1, box.width // 2)
    if len(groups) > most_bins:  # more roles than cells: one group, cells shared across
        groups = [order]
    per = max(1, math.ceil(n / most_bins))
    while sum(math.ceil(len(g) / per) for g in groups) > most_bins:
        per += 1
    where: dict[int, int] = {}
    starts = []  # each group's first cell
    bins = 0
    for g in groups:
        starts.append(bins)
        for k, a in enumerate(g):
            where[a] = bins + k // per
        bins += math.ceil(len(g) / per)
    bins = max(1, bins)
    px = box.width // bins
    counts = [[0] * bins for _ in range(bins)]
    for m in talk:
        s = _index(m.sender)
        if s is None or s not in where:
            continue
        heard = m.audience or tuple(f"agent_{a}" for a in order if a != s)
        for r in heard:
            b = _index(r)
            if b is not None and b in where:
                counts[where[s]][where[b]] += 1
    most = max((c for row in counts for c in row), default=0)
    frame = pg.Rect(box.x, box.y, px * bins, px * bins)
    pg.draw.rect(surf, (255, 255, 255), frame)
    for b in starts[1:]:  # under the cells: where one role's agents end, the next's begin
        pg.draw.line(surf, (200, 200, 210), (box.x + b * px, box.y),
                     (box.x + b * px, box.y + px * bins - 1))
        pg.draw.line(surf, (200, 200, 210), (box.x, box.y + b * px),
                     (box.x + px * bins - 1, box.y + b * px))
    for i in range(bins):
        for j in range(bins):
            c = counts[i][j]
            if c:
                k = 0.35 + 0.65 * c / most
                color = (int(235 - 205 * k), int(240 - 170 * k), int(250 - 90 * k))
                surf.fill(color, (box.x + j * px, box.y + i * px, px, px))
    if selected is not None and selected in where:
        k = where[selected]
        pg.draw.rect(surf, (230, 150, 20), (box.x, box.y + k * px, px * bins, px), 1)
        pg.draw.rect(surf, (230, 150, 20), (box.x + k * px, box.y, px, px * bins), 1)
    pg.draw.rect(surf, PANEL_MUTED, frame.inflate(2, 2), 1)
    return counts


def _index(agent: str) -> int | None:
    return int(agent[6:]) if agent.startswith("agent_") and agent[6:].isdigit() else None


def _messages(cur: _Cursor, overlay: Overlay, names: list[str], bottom: int,
              pinned: list[Speech] = (), back: int = 0) -> list[Speech]:
    """The newest messages that fit above ``bottom``, newest at the bottom; ``pinned``
    ones (a bubble had no room for them) are dropped last. ``back`` newest messages are
    skipped (the log scrolled back)."""
    index = {f"agent_{i}": i for i in range(len(names))}
    if not overlay.log:
        cur.header("messages")
        cur.line("no messages yet", SMALL, PANEL_MUTED)
        return []
    total = len(overlay.log)
    back = min(max(back, 0), total - 1)
    room = bottom - cur.y - (SMALL + 18)  # less the header
    step = SMALL + 2
    # Only as many candidates as could fit (one-line blocks), so a long log costs no
    # more to draw than a short one.
    fit = max(12, room // (SMALL + 4 + step + 4) + 1)
    candidates = list(itertools.islice(reversed(overlay.log), back, back + fit))[::-1]
    blocks = []
    for msg in candidates:
        who = names[index[msg.sender]] if msg.sender in index else msg.sender
        if not msg.audience or len(msg.audience) >= len(names) - 1 > 1:
            to = "all"
        elif len(msg.audience) > 3:
            to = f"{len(msg.audience)} agents"
        else:
            to = ", ".join(names[index[r]] if r in index else r for r in msg.audience)
        lines = cur.text.wrap(msg.text, SMALL, cur.width - 10, 3)
        blocks.append((msg, f"{who} -> {to}", lines))

    def height(lines: list[str]) -> int:
        return SMALL + 4 + len(lines) * step + 4

    keep = {id(m) for m in pinned}
    while len(blocks) > 1 and sum(height(b[2]) for b in blocks) > room:
        k = next((k for k, b in enumerate(blocks) if id(b[0]) not in keep), 0)
        blocks.pop(k)
    if blocks and height(blocks[0][2]) > room:  # one long message: as many lines as fit
        msg, head, lines = blocks[0]
        keep = max(1, (room - SMALL - 8) // step)
        blocks[0] = (msg, head, lines[:keep - 1] + [lines[keep - 1].rstrip(".") + "..."]
                     if keep < len(lines) else lines)
    if back:
        cur.header("messages", f"{len(blocks)} of {total}, {back} newer below")
    else:
        cur.header("messages", f"latest {len(blocks)} of {total}" if len(blocks) < total
                   else f"{len(blocks)}")
    for msg, head, lines in blocks:
        color = agent_color(index.get(msg.sender, 0))
        top = cur.y
        cur.text.blit(cur.surf, head, (cur.x + 8, cur.y), SMALL, color, True)
        cur.y += SMALL + 4
        for s in lines:
            cur.text.blit(cur.surf, s, (cur.x + 8, cur.y), SMALL, PANEL_TEXT)
            cur.y += step
        cur.pg.draw.line(cur.surf, color, (cur.x + 2, top), (cur.x + 2, cur.y - 2), 3)
        cur.y += 4
    return [b[0] for b in blocks]


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
