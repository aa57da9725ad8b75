"""A readable text picture of the house (``render_mode="ansi"``)."""

from __future__ import annotations

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.state import HouseholdState

LEGEND = ("Legend: # wall, + closed door, = open door, . floor, 0-9 agents "
          "(A-Z after 9), UPPER furniture (lower case when an open container)")


def render_ansi(state: HouseholdState) -> str:
    """The grid with agents, doors and furniture, a legend, and the goal progress."""
    scene = state.scene
    lay = scene.layout
    cat = load_catalog().furniture
    rows = [list(line) for line in lay.grid]
    for row in rows:
        for c, ch in enumerate(row):
            if ch.islower():
                row[c] = "."
    for i, d in enumerate(lay.doors):
        rows[d.cell[0]][d.cell[1]] = "=" if state.door_open[i] else "+"
    for i, f in enumerate(lay.furniture):
        glyph = cat[f.type].glyph
        opened = scene.is_container[i] and state.container_open[i]
        rows[f.cell[0]][f.cell[1]] = glyph.lower() if opened else glyph
    for a in range(len(state.agent_pos)):
        r, c = state.agent_cell(a)
        rows[r][c] = str(a) if a < 10 else chr(ord("A") + (a - 10) % 26)
    glyphs = sorted({f.type: cat[f.type].glyph for f in lay.furniture}.items(),
                    key=lambda kv: kv[1])
    furniture = ", ".join(f"{g} {t}" for t, g in glyphs)
    goal = "; ".join(f"{p} [{have}/{p.count}]" for p, have in zip(scene.goal, state.progress))
    held = "; ".join(f"{a}: {', '.join(scene.objects[o] for o in h)}"
                     for a, h in enumerate(state.hands) if h)
    lines = ["".join(r) for r in rows]
    lines += [f"tick {state.tick}/{scene.step_limit}  goal: {goal}", LEGEND,
              f"Furniture: {furniture}"]
    if held:
        lines.append(f"Held: {held}")
    return "\n".join(lines)
