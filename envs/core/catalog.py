"""The catalog of furniture types, object classes and room types (``assets/catalog.yaml``).

Integer ids used in array observations are positions in these lists, derived once
here so that no other module types them twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import yaml

from orgteams.assets import asset_dir


@dataclass(frozen=True)
class FurnitureType:
    """A kind of furniture: a surface (things lie on it) or a container (things go in)."""

    name: str
    kind: str  # "surface" | "container"
    capacity: int
    glyph: str
    color: tuple[int, int, int]

    @property
    def is_container(self) -> bool:
        return self.kind == "container"


@dataclass(frozen=True)
class Catalog:
    furniture: dict[str, FurnitureType]
    object_colors: dict[str, tuple[int, int, int]]
    object_glyphs: dict[str, str]
    room_colors: dict[str, tuple[int, int, int]]
    required_rooms: tuple[str, ...]

    @property
    def object_classes(self) -> list[str]:
        return list(self.object_glyphs)

    @property
    def furniture_types(self) -> list[str]:
        return list(self.furniture)

    def class_id(self, cls: str) -> int:
        return _index(tuple(self.object_glyphs))[cls]

    def furniture_type_id(self, ftype: str) -> int:
        return _index(tuple(self.furniture))[ftype]


@cache
def _index(names: tuple[str, ...]) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


@cache
def load_catalog() -> Catalog:
    """Load and cache ``assets/catalog.yaml``."""
    raw = yaml.safe_load((asset_dir("catalog.yaml")).read_text())
    furniture = {
        name: FurnitureType(name, d["kind"], int(d["capacity"]), d["glyph"], tuple(d["color"]))
        for name, d in raw["furniture"].items()
    }
    return Catalog(
        furniture=furniture,
        object_colors={k: tuple(v["color"]) for k, v in raw["objects"].items()},
        object_glyphs={k: v["glyph"] for k, v in raw["objects"].items()},
        room_colors={k: tuple(v["color"]) for k, v in raw["rooms"].items()},
        required_rooms=tuple(raw["required_rooms"]),
    )


def room_type(room_name: str) -> str:
    """``bedroom_2`` -> ``bedroom``: a room's type is its name without a numeric suffix."""
    base, _, suffix = room_name.rpartition("_")
    return base if base and suffix.isdigit() else room_name
