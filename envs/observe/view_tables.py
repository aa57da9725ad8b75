"""The static tables of array observations: what depends only on the layout and the
view radius, built once per (layout, radius, observability) and shared by every
episode's :class:`~orgteams.envs.observe.array_obs.ArrayObserver` on it.

The tile codes and channel layout are documented in :mod:`orgteams.envs.observe.array_obs`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orgteams.envs.core.catalog import load_catalog, room_type
from orgteams.envs.core.layout import DOOR, FLOOR, WALL
from orgteams.envs.core.state import Scene

T_UNSEEN, T_FLOOR, T_WALL, T_DOOR_CLOSED, T_DOOR_OPEN, T_SURFACE, T_CLOSED, T_OPEN = range(8)
BASE_CHANNELS = 4
WINDOW_CACHE_BYTES = 64 << 20  # at most this much (virtual) memory for the window cache
# What layout_tables returns: the observer attributes shared with the next episode's observer.
LAYOUT_ATTRS = ("_channels", "_flat_base", "_top_left", "_pad_list", "_furniture_pad",
                "_container_list", "_switch_pad", "_switch_base", "_n_switches", "_offsets",
                "_masks", "_windows", "_window_ready", "_seen", "_window_cache",
                "_cache_version", "_cache_fits")


def layout_tables(scene: Scene, r: int) -> dict[str, Any]:
    """The observer attributes named in :data:`LAYOUT_ATTRS` for ``scene``'s layout and
    view radius ``r``. The mutable ones (window caches, masks) start empty and are
    filled on first use by the observers that share them."""
    cat = load_catalog()
    lay = scene.layout
    h, w = lay.height, lay.width
    c = BASE_CHANNELS + len(cat.object_classes)
    base = np.zeros((h, w, c), np.uint8)
    tiles = lay.tiles
    base[..., 0] = np.select([tiles == FLOOR, tiles == WALL, tiles == DOOR],
                             [T_FLOOR, T_WALL, T_DOOR_CLOSED], T_UNSEEN)
    room_types = list(cat.room_colors)
    room_ids = np.array([room_types.index(room_type(n)) + 1 for n in lay.rooms], np.uint8)
    inside = lay.room_map >= 0
    base[..., 1][inside] = room_ids[lay.room_map[inside]]
    for f in lay.furniture:
        base[f.cell + (0,)] = T_SURFACE
        base[f.cell + (3,)] = cat.furniture_type_id(f.type) + 1
    ph, pw = h + 2 * r, w + 2 * r
    padded_base = np.zeros((ph, pw, c), np.uint8)
    padded_base[r:r + h, r:r + w] = base
    containers = [i for i, is_c in enumerate(scene.is_container) if is_c]
    furniture_flat = np.array([f.cell[0] * w + f.cell[1] for f in lay.furniture], int)
    door_flat = np.array([d.cell[0] * w + d.cell[1] for d in lay.doors], int)
    cells = np.arange(h * w)
    pad_index = (cells // w + r) * pw + cells % w + r
    # Doors and containers: one scatter of "closed + is_open" into channel 0 per tick.
    door_pad = pad_index[door_flat]
    container_pad = pad_index[furniture_flat[containers]]
    switch_pad = np.concatenate([door_pad, container_pad]).astype(np.intp)
    side = 2 * r + 1
    return {
        "_channels": c,
        "_flat_base": padded_base.reshape(ph * pw, -1),
        "_top_left": pad_index - (r * pw + r),  # padded index of the window corner
        "_pad_list": pad_index.tolist(),
        "_furniture_pad": pad_index[furniture_flat].tolist(),
        "_container_list": containers,
        "_switch_pad": switch_pad,
        "_switch_base": np.array([T_DOOR_CLOSED] * len(door_pad)
                                 + [T_CLOSED] * len(container_pad), np.uint8),
        "_n_switches": len(switch_pad),
        "_offsets": (np.arange(side)[:, None] * pw + np.arange(side)).ravel(),
        "_masks": {},
        # Per standing cell, the buffer rows of its masked window, filled on first use.
        "_windows": np.zeros((h * w, side * side), np.intp),
        "_window_ready": set(),
        # Per standing cell: {cell a teammate may stand on and be seen: its image offset}.
        "_seen": {},
        # Small teams: per standing cell, its masked window of the layer with the self
        # mark (allocated on first use; pages never touched stay unallocated), and the
        # layer version each was taken at.
        "_window_cache": None,
        "_cache_version": [-1] * (h * w),
        # A house so big (or a view so wide) that the cache would pass the budget keeps
        # the whole-house buffer path for small teams too.
        "_cache_fits": h * w * side * side * c <= WINDOW_CACHE_BYTES,
    }


__all__ = ["BASE_CHANNELS", "LAYOUT_ATTRS", "layout_tables"]
