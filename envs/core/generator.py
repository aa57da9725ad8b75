"""Seeded procedural households: ``generated:<rooms>:<seed>`` layouts.

:func:`generate_layout` lays rooms out on a grid of blocks (random column widths
and row heights, so walls line up and rooms share them), the last row's final room
stretched to keep the house rectangular. Doors follow a random spanning tree of the
room adjacency graph plus a few extra doors, so every room has a door and the house
is connected; some doors start closed. Furniture goes against the room's walls,
never in front of a door and never cutting a room's floor in two. Every room type
gets its usual furniture, and every house has what every shipped task targets
(fridge, dishwasher, kitchen table, coffee table).

The result is built with :meth:`Layout.from_grid`, so it passes the same
validation as the hand-made layouts. Rooms use single lowercase letters as legend
keys: ``a-z`` first, then Greek and Cyrillic lowercase letters (``str.islower``
accepts them), which allows up to :data:`MAX_ROOMS` rooms without a new format.
The same ``(rooms, seed)`` always gives the same layout.
"""

from __future__ import annotations

import math
import re
import string

import numpy as np

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import DIRECTIONS, Layout
from orgteams.envs.core.limits import MAX_SEED
from orgteams.errors import UserError

ROOM_KEYS = (string.ascii_lowercase
             + "".join(chr(c) for c in range(0x3B1, 0x3CA))  # Greek alpha..omega
             + "".join(chr(c) for c in range(0x430, 0x450)))  # Cyrillic a..ya
MIN_ROOMS = 4
MAX_ROOMS = len(ROOM_KEYS)
INTERIOR_WIDTH = (6, 9)  # inclusive range of a column's interior width
INTERIOR_HEIGHT = (5, 7)
EXTRA_DOOR_PROB = 0.25
CLOSED_DOOR_PROB = 0.35

# Furniture per room type: always these, then each optional group with its probability
# (one type drawn from the group).
ROOM_FURNITURE: dict[str, tuple[tuple[str, ...], tuple[tuple[float, tuple[str, ...]], ...]]] = {
    "kitchen": (("fridge", "dishwasher", "kitchen_cabinet", "kitchen_table", "counter"),
                ((1.0, ("microwave", "stove")), (0.5, ("microwave", "stove")))),
    "living_room": (("coffee_table", "sofa", "tv_stand"), ((1.0, ("cabinet", "bookshelf")),)),
    "bedroom": (("bed", "nightstand"), ((0.5, ("desk",)), (0.3, ("cabinet",)))),
    "bathroom": (("sink", "bathroom_cabinet"), ()),
    "dining_room": (("bench", "cabinet"), ((0.5, ("counter",)),)),
    "office": (("desk", "bookshelf"), ((0.5, ("cabinet",)),)),
    "hallway": (("bench",), ((0.5, ("cabinet",)),)),
    "storage": (("cabinet",), ((1.0, ("cabinet", "bench")), (0.5, ("bookshelf",)))),
}
_NAME = re.compile(r"generated:(\d+)(?::(\d+))?")
_NAME_HELP = "expected 'generated:<rooms>' or 'generated:<rooms>:<seed>' with integers"


def parse_generated_name(name: str) -> dict[str, int]:
    """``"generated:12:3"`` -> ``{"rooms": 12, "seed": 3}``; the seed defaults to 0.

    Raises:
        ValueError: when the name does not have that form.
    """
    match = _NAME.fullmatch(name.strip()) if isinstance(name, str) else None
    if match is None:
        raise UserError(f"malformed generated layout name {name!r}: {_NAME_HELP}")
    rooms, seed = int(match.group(1)), int(match.group(2) or 0)
    if seed > MAX_SEED:
        raise UserError(f"generated layout {name!r}: the seed must be from 0 to {MAX_SEED}, "
                        f"got {seed}")
    return {"rooms": rooms, "seed": seed}


def generate_layout(rooms: int, seed: int = 0) -> Layout:
    """A valid household of ``rooms`` rooms (4 to :data:`MAX_ROOMS`), the same for one seed.

    Raises:
        ValueError: when ``rooms`` is out of range or ``seed`` is negative.
    """
    if not isinstance(rooms, int | np.integer) or not MIN_ROOMS <= rooms <= MAX_ROOMS:
        raise UserError(f"rooms must be an integer from {MIN_ROOMS} to {MAX_ROOMS}, "
                        f"got {rooms!r}")
    if not isinstance(seed, int | np.integer) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"seed must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    rooms, seed = int(rooms), int(seed)
    rng = np.random.default_rng([rooms, seed])
    names = _room_names(rooms, rng)
    boxes = _room_boxes(rooms, rng)
    order = rng.permutation(rooms)
    box_of = {names[i]: boxes[int(j)] for i, j in enumerate(order)}
    height = max(b[2] for b in boxes) + 1
    width = max(b[3] for b in boxes) + 1
    grid = [["#"] * width for _ in range(height)]
    keys = dict(zip(names, ROOM_KEYS))
    for name, (r0, c0, r1, c1) in box_of.items():
        for r in range(r0 + 1, r1):
            grid[r][c0 + 1:c1] = [keys[name]] * (c1 - c0 - 1)
    door_fronts = _place_doors(grid, [box_of[n] for n in names], rng)
    furn_keys: dict[str, str] = {}
    for i, name in enumerate(names):
        types = _furniture_for(name, rng)
        _place_furniture(grid, box_of[name], types, door_fronts[i], furn_keys, rng)
    lines = ["".join(row) for row in grid]
    layout_name = f"generated:{rooms}:{seed}"
    return Layout.from_grid(
        lines, rooms={k: n for n, k in keys.items()},
        furniture={k: t for t, k in furn_keys.items()}, name=layout_name, source=layout_name,
        description=f"A procedurally generated house with {rooms} rooms (seed {seed}).")


def _room_names(rooms: int, rng: np.random.Generator) -> list[str]:
    catalog = load_catalog()
    required = list(catalog.required_rooms)
    types = list(catalog.room_colors)
    counts = {t: 1 for t in required}
    names = list(required)
    for _ in range(rooms - len(required)):
        t = types[int(rng.integers(len(types)))]
        counts[t] = counts.get(t, 0) + 1
        names.append(t if counts[t] == 1 else f"{t}_{counts[t]}")
    return names


def _room_boxes(rooms: int, rng: np.random.Generator) -> list[tuple[int, int, int, int]]:
    """Wall rectangles ``(top, left, bottom, right)`` on a grid of blocks; walls shared."""
    cols = math.ceil(math.sqrt(rooms))
    rows = math.ceil(rooms / cols)
    widths = rng.integers(INTERIOR_WIDTH[0], INTERIOR_WIDTH[1] + 1, size=cols)
    heights = rng.integers(INTERIOR_HEIGHT[0], INTERIOR_HEIGHT[1] + 1, size=rows)
    xs = np.concatenate([[0], np.cumsum(widths + 1)]).tolist()
    ys = np.concatenate([[0], np.cumsum(heights + 1)]).tolist()
    boxes = []
    for i in range(rooms):
        r, c = divmod(i, cols)
        last = i == rooms - 1
        boxes.append((ys[r], xs[c], ys[r + 1], xs[cols] if last else xs[c + 1]))
    return boxes


def _adjacent(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[str, int, int, int] | None:
    """Where rooms a and b share a wall: (axis, wall line, first, last interior cell)."""
    if a[3] == b[1] or b[3] == a[1]:  # side by side: a vertical wall
        lo, hi = max(a[0], b[0]) + 1, min(a[2], b[2]) - 1
        return ("v", a[3] if a[3] == b[1] else a[1], lo, hi) if lo <= hi else None
    if a[2] == b[0] or b[2] == a[0]:  # one above the other: a horizontal wall
        lo, hi = max(a[1], b[1]) + 1, min(a[3], b[3]) - 1
        return ("h", a[2] if a[2] == b[0] else a[0], lo, hi) if lo <= hi else None
    return None


def _place_doors(grid: list[list[str]], boxes: list[tuple[int, ...]],
                 rng: np.random.Generator) -> list[set[tuple[int, int]]]:
    """Cut doors (spanning tree + extras); return per room the floor cells in front of them."""
    n = len(boxes)
    edges = [(i, j, w) for i in range(n) for j in range(i + 1, n)
             if (w := _adjacent(boxes[i], boxes[j])) is not None]
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    chosen = []
    for k in rng.permutation(len(edges)):
        i, j, wall = edges[int(k)]
        joined = find(i) != find(j)
        if joined:
            parent[find(i)] = find(j)
        if joined or rng.random() < EXTRA_DOOR_PROB:
            chosen.append((i, j, wall))
    closed = rng.random(len(chosen)) < CLOSED_DOOR_PROB
    if len(chosen) > 1 and not closed.any():
        closed[int(rng.integers(len(chosen)))] = True
    fronts: list[set[tuple[int, int]]] = [set() for _ in range(n)]
    for (i, j, (axis, line, lo, hi)), shut in zip(chosen, closed):
        at = int(rng.integers(lo, hi + 1))
        r, c = (at, line) if axis == "v" else (line, at)
        grid[r][c] = "+" if shut else "="
        for dr, dc in ((0, -1), (0, 1)) if axis == "v" else ((-1, 0), (1, 0)):
            cell = (r + dr, c + dc)
            for room in (i, j):
                b = boxes[room]
                if b[0] < cell[0] < b[2] and b[1] < cell[1] < b[3]:
                    fronts[room].add(cell)
    return fronts


def _furniture_for(name: str, rng: np.random.Generator) -> list[str]:
    base = name.rpartition("_")[0] if name.rpartition("_")[2].isdigit() else name
    always, optional = ROOM_FURNITURE[base]
    types = list(always)
    for prob, group in optional:
        if rng.random() < prob:
            types.append(group[int(rng.integers(len(group)))])
    return types


def _place_furniture(grid: list[list[str]], box: tuple[int, ...], types: list[str],
                     blocked: set[tuple[int, int]], furn_keys: dict[str, str],
                     rng: np.random.Generator) -> None:
    """Put ``types`` on cells along the walls, keeping the room's floor connected."""
    r0, c0, r1, c1 = box
    interior = {(r, c) for r in range(r0 + 1, r1) for c in range(c0 + 1, c1)}
    ring = sorted(cell for cell in interior
                  if cell[0] in (r0 + 1, r1 - 1) or cell[1] in (c0 + 1, c1 - 1))
    sites = [ring[int(k)] for k in rng.permutation(len(ring)) if ring[int(k)] not in blocked]
    floor = set(interior)
    placed: list[tuple[int, int]] = []
    for ftype in types:
        for cell in sites:
            if cell in floor and _still_open(floor - {cell}, placed + [cell]):
                floor.discard(cell)
                placed.append(cell)
                key = furn_keys.setdefault(ftype, load_catalog().furniture[ftype].glyph)
                grid[cell[0]][cell[1]] = key
                break
        else:
            raise RuntimeError(f"generator bug: no wall cell left for {ftype} in room {box}")


def _still_open(floor: set[tuple[int, int]], furniture: list[tuple[int, int]]) -> bool:
    """True when ``floor`` is one connected region and every furniture cell touches it."""
    if any(all((r + dr, c + dc) not in floor for dr, dc in DIRECTIONS) for r, c in furniture):
        return False
    start = next(iter(floor))
    seen = {start}
    stack = [start]
    while stack:
        r, c = stack.pop()
        for dr, dc in DIRECTIONS:
            nxt = (r + dr, c + dc)
            if nxt in floor and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return len(seen) == len(floor)
