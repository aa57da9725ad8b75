"""Household layouts: an ASCII grid plus a legend, loaded from ``assets/layouts/*.yaml``.

Grid characters:

====  =====================================================
``#``  wall
``+``  door, initially closed
``=``  door, initially open
`` `` outside the house (never walkable)
a-z   floor of a room; the file's ``rooms`` legend names it (any single lowercase
      letter works, e.g. Greek ``α``: generated houses of more than 26 rooms use them)
A-Z   one piece of furniture; the file's ``furniture`` legend gives its type
====  =====================================================

Layered constructors as in Overcooked-AI: :func:`load_layout` (by name or path)
-> :meth:`Layout.from_dict` -> :meth:`Layout.from_grid`. Every malformed input raises
``ValueError`` naming the source, row, column and what is wrong.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from orgteams.assets import asset_dir, asset_names
from orgteams.envs.core.catalog import load_catalog, room_type
from orgteams.envs.core.limits import MAX_GRID_SIDE
from orgteams.envs.core.user_files import load_yaml, plain_name, read_text
from orgteams.errors import UserError, unknown_name, validation_line

WALL, FLOOR, DOOR, FURNITURE, OUTSIDE = 0, 1, 2, 3, 4
FIXED_CHARS = {"#": WALL, "+": DOOR, "=": DOOR, " ": OUTSIDE}
# Row/column offsets for directions 0..3 = north, east, south, west.
DIRECTIONS = ((-1, 0), (0, 1), (1, 0), (0, -1))
DIRECTION_NAMES = ("north", "east", "south", "west")


class LayoutFile(BaseModel):
    """The fields of a layout file, with their types (the grid itself is checked by parsing).

    ``grid`` is a block of text or a list of rows; ``rooms`` maps one lowercase letter to
    a room name (``kitchen``, ``bedroom_2``); ``furniture`` one uppercase letter to a
    catalog furniture type.
    """

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    description: str = ""
    grid: str | list[str]
    rooms: dict[str, str]
    furniture: dict[str, str] | None = None
    require_rooms: bool = True

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        # part of file names (orgteams demos: '<layout>_<task>_n3_s0.npz' under --out)
        return None if value is None else plain_name(value)

    @field_validator("grid", mode="before")
    @classmethod
    def _text_or_rows(cls, value: Any) -> Any:
        if isinstance(value, str) or (isinstance(value, list)
                                      and all(isinstance(row, str) for row in value)):
            return value
        raise ValueError(f"must be the grid as a block of text or a list of rows, got "
                         f"{type(value).__name__}")


@dataclass(frozen=True)
class Furniture:
    """One piece of furniture placed in a layout."""

    name: str  # stable id, e.g. "kitchen_cabinet_2" (or "fridge" when unique)
    type: str  # catalog type
    cell: tuple[int, int]
    room: int  # index into Layout.rooms


@dataclass(frozen=True)
class Door:
    cell: tuple[int, int]
    rooms: tuple[int, int]
    initially_open: bool


@dataclass(frozen=True, eq=False)
class Layout:
    """A parsed, validated household. Immutable; shared by every episode on it."""

    name: str
    source: str
    grid: tuple[str, ...]
    room_legend: dict[str, str]
    furniture_legend: dict[str, str]
    rooms: tuple[str, ...]
    tiles: np.ndarray  # (H, W) uint8 of WALL/FLOOR/DOOR/FURNITURE/OUTSIDE
    room_map: np.ndarray  # (H, W) int16, room index of floor/furniture cells, else -1
    furniture: tuple[Furniture, ...]
    doors: tuple[Door, ...]
    description: str = ""
    _dict: dict = field(default_factory=dict, repr=False)

    @property
    def height(self) -> int:
        """Rows of the grid."""
        return self.tiles.shape[0]

    @property
    def width(self) -> int:
        """Columns of the grid."""
        return self.tiles.shape[1]

    def to_dict(self) -> dict:
        """The layout as the plain dict it was read from (round-trips through from_dict)."""
        return dict(self._dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.grid))

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> Layout:
        """Build from the YAML structure (``name``, ``grid``, ``rooms``, ``furniture``).

        Raises:
            UserError: One line naming ``source`` and the field, e.g. ``"house.yaml:
                field 'rooms.k': Input should be a valid string"``.
        """
        if not isinstance(data, dict):
            raise UserError(f"{source}: expected a mapping with keys name, grid, rooms, furniture")
        missing = [k for k in ("grid", "rooms") if k not in data]
        if missing:
            raise UserError(f"{source}: missing required key(s) {', '.join(missing)}")
        try:
            spec = LayoutFile.model_validate(data)
        except ValidationError as exc:
            raise UserError(f"{source}: {validation_line(exc, LayoutFile.model_fields)}"
                            ) from None
        lines = spec.grid.splitlines() if isinstance(spec.grid, str) else list(spec.grid)
        while lines and not lines[-1].strip():
            lines.pop()
        return cls.from_grid(
            lines,
            rooms=spec.rooms,
            furniture=spec.furniture or {},
            name=spec.name if spec.name is not None else Path(source).stem,
            source=source,
            description=spec.description,
            require_rooms=spec.require_rooms,
        )

    @classmethod
    def from_grid(
        cls,
        lines: list[str],
        rooms: dict[str, str],
        furniture: dict[str, str] | None = None,
        name: str = "inline",
        source: str = "<inline>",
        description: str = "",
        require_rooms: bool = True,
    ) -> Layout:
        """Parse and validate an ASCII grid (see module docstring for the characters)."""
        return _parse(lines, dict(rooms), dict(furniture or {}), name, source, description,
                      require_rooms)


def _err(source: str, row: int | None, col: int | None, msg: str) -> ValueError:
    where = f"row {row}, col {col}" if row is not None else "whole layout"
    return UserError(f"{source}: {where}: {msg}")


def _parse(lines, room_legend, furn_legend, name, source, description, require_rooms) -> Layout:
    catalog = load_catalog()
    if not lines:
        raise _err(source, None, None, "grid is empty")
    width = len(lines[0])
    if len(lines) > MAX_GRID_SIDE or width > MAX_GRID_SIDE:
        raise _err(source, None, None, f"grid is {len(lines)} rows x {width} columns; the "
                   f"limit is {MAX_GRID_SIDE} x {MAX_GRID_SIDE}")
    for r, line in enumerate(lines):
        if len(line) != width:
            raise _err(source, r, min(len(line), width),
                       f"ragged row: length {len(line)}, expected {width} like row 0")
    for ch, rname in room_legend.items():
        if len(ch) != 1 or not ch.islower():
            raise _err(source, None, None, f"room key {ch!r} must be one lowercase letter")
        if room_type(rname) not in catalog.room_colors:
            raise UserError(f"{source}: "
                            f"{unknown_name('room type', room_type(rname), catalog.room_colors)}")
    for ch, ftype in furn_legend.items():
        if len(ch) != 1 or not ch.isupper():
            raise _err(source, None, None, f"furniture key {ch!r} must be one uppercase letter")
        if ftype not in catalog.furniture:
            raise UserError(f"{source}: "
                            f"{unknown_name('furniture type', ftype, catalog.furniture)}")

    room_names = tuple(dict.fromkeys(room_legend.values()))
    room_index = {n: i for i, n in enumerate(room_names)}
    h = len(lines)
    tiles = np.full((h, width), WALL, dtype=np.uint8)
    room_map = np.full((h, width), -1, dtype=np.int16)
    furn_cells: list[tuple[int, int, str]] = []
    door_cells: list[tuple[int, int, bool]] = []
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            if ch in FIXED_CHARS:
                tiles[r, c] = FIXED_CHARS[ch]
                if ch in "+=":
                    door_cells.append((r, c, ch == "="))
            elif ch in room_legend:
                tiles[r, c] = FLOOR
                room_map[r, c] = room_index[room_legend[ch]]
                if r in (0, h - 1) or c in (0, width - 1):
                    raise _err(source, r, c, "floor on the edge of the grid: the house must be "
                               "closed by walls")
            elif ch in furn_legend:
                tiles[r, c] = FURNITURE
                furn_cells.append((r, c, furn_legend[ch]))
            else:
                raise _err(source, r, c, f"unknown character {ch!r}; known: '#', '+', '=', ' ', "
                           f"rooms {sorted(room_legend)}, furniture {sorted(furn_legend)}")

    def neighbours(r, c):
        for dr, dc in DIRECTIONS:
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < width:
                yield rr, cc

    doors = []
    for r, c, is_open in door_cells:
        pair = None
        for (dr, dc) in ((1, 0), (0, 1)):
            a, b = (r - dr, c - dc), (r + dr, c + dc)
            if all(0 <= x < h and 0 <= y < width and tiles[x, y] == FLOOR for x, y in (a, b)):
                pair = (int(room_map[a]), int(room_map[b]))
        if pair is None:
            raise _err(source, r, c, "door must have floor on two opposite sides")
        doors.append(Door((r, c), pair, is_open))

    furniture = []
    counts = Counter(t for _, _, t in furn_cells)
    seen: Counter = Counter()
    for r, c, ftype in furn_cells:
        adj = [int(room_map[x, y]) for x, y in neighbours(r, c) if tiles[x, y] == FLOOR]
        if not adj:
            raise _err(source, r, c, f"{ftype} has no floor cell next to it: nobody can reach it")
        room = Counter(adj).most_common(1)[0][0]
        room_map[r, c] = room
        seen[ftype] += 1
        fname = ftype if counts[ftype] == 1 else f"{ftype}_{seen[ftype]}"
        furniture.append(Furniture(fname, ftype, (r, c), room))

    present = set(int(x) for x in np.unique(room_map[tiles == FLOOR]))
    for i, rname in enumerate(room_names):
        if i not in present:
            raise _err(source, None, None, f"room {rname!r} is in the legend but has no floor cell")
    if len(room_names) > 1:
        doored = {x for d in doors for x in d.rooms}
        for i, rname in enumerate(room_names):
            if i not in doored:
                r, c = (int(v) for v in np.argwhere(room_map == i)[0])
                raise _err(source, r, c, f"room {rname!r} has no door")
    if require_rooms:
        types = {room_type(n) for n in room_names}
        for req in catalog.required_rooms:
            if req not in types:
                raise _err(source, None, None, f"missing required room {req!r} "
                           f"(every household needs {', '.join(catalog.required_rooms)})")

    # Every floor cell must be reachable from every other through floor and doors.
    walk = (tiles == FLOOR) | (tiles == DOOR)
    start = tuple(int(v) for v in np.argwhere(tiles == FLOOR)[0])
    reached = np.zeros_like(walk)
    reached[start] = True
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for x, y in neighbours(r, c):
            if walk[x, y] and not reached[x, y]:
                reached[x, y] = True
                queue.append((x, y))
    unreached = np.argwhere(walk & ~reached)
    if len(unreached):
        r, c = (int(v) for v in unreached[0])
        raise _err(source, r, c, f"cell is unreachable from row {start[0]}, col {start[1]} "
                   "(walled off: add a door)")

    raw = {"name": name, "description": description, "rooms": room_legend,
           "furniture": furn_legend, "grid": "\n".join(lines)}
    if not require_rooms:  # so that from_dict(to_dict()) accepts the same grid again
        raw["require_rooms"] = False
    return Layout(name=name, source=source, grid=tuple(lines), room_legend=room_legend,
                  furniture_legend=furn_legend, rooms=room_names, tiles=tiles,
                  room_map=room_map, furniture=tuple(furniture), doors=tuple(doors),
                  description=description, _dict=raw)


def list_layouts() -> list[str]:
    """Names of the hand-made layouts shipped in ``assets/layouts``."""
    return asset_names("layouts")


def load_layout(name_or_path: str | Path) -> Layout:
    """Load a shipped layout by name, a YAML path, or ``generated:<rooms>:<seed>``."""
    text = str(name_or_path)
    if text.startswith("generated"):
        from orgteams.envs.core.generator import generate_layout, parse_generated_name

        return generate_layout(**parse_generated_name(text))
    path = Path(text)
    if path.suffix not in (".yaml", ".yml"):
        if text not in list_layouts():
            raise unknown_name("layout", text, list_layouts() + ["generated:<rooms>:<seed>"])
        path = asset_dir("layouts", f"{text}.yaml")
    if not path.exists():
        raise UserError(f"Layout file not found: {path}")
    data = load_yaml(read_text(path, "a layout file"), str(path))
    return Layout.from_dict(data, source=str(path))
