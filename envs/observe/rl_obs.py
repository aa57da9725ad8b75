"""Observations for RL libraries: ``flat`` and ``image``, both encoded from ``array``.

Both start from the array observation (:mod:`orgteams.envs.observe.array_obs`: same view,
same masking) and re-encode each cell as *planes*, one-hot where a value is
categorical:

======  =====  ==========================================================================
planes  count  meaning per cell
======  =====  ==========================================================================
0-6     7      tile one-hot: floor, wall, door closed, door open, surface, container
               closed, container open (all zero: unseen)
7-8     2      agent: self, teammate
9-26    18     furniture type one-hot (catalog order)
27      1      visible objects here, any class (on a surface, in an open container, or
               held by an agent standing here)
28-37   10     per goal row i (``2i``, ``2i+1``): objects of row i's class here; row i's
               target furniture type here while the row still misses units
======  =====  ==========================================================================

* ``obs_mode="flat"``: one ``Box(0, 1, (D,), float32)``: the planes of the ``(2r+1)^2``
  view cells (cell-major, planes last), then each hand slot's object class one-hot
  (17 each), then per goal row its class one-hot, target type one-hot and units still
  missing. Counts are divided by their most (:data:`MAX_COUNT` objects per cell; the
  task's most units for a goal row), so every entry spans exactly ``[0, 1]`` (one
  bound for all: SuperSuit's ``agent_indicator_v0`` then stays inside the space).
* ``obs_mode="image"``: ``Box(0, 255, (38, S, S), uint8)``, channels first: the same
  planes with binary ones as 0/255 and counts as ``31 * count``, each cell drawn as
  ``scale x scale`` pixels. ``scale`` defaults to the smallest that makes ``S`` at least
  36 (the input SB3's ``NatureCNN`` needs) and more than the 38 channels (so SB3 sees
  the channel axis as the smallest and keeps it first). Hands and goal are in the
  planes: held objects count at the holder's cell, goal rows are planes 28-37.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.observe.array_obs import BASE_CHANNELS, MAX_GOAL

TILE_PLANES, AGENT_PLANES = 7, 2
MAX_COUNT = 8  # objects one cell can show: the largest furniture capacity
COUNT_SCALE = 31  # image value per object (8 * 31 = 248 <= 255)
NATURE_CNN_MIN = 36


def _sizes() -> tuple[int, int]:
    cat = load_catalog()
    return len(cat.object_classes), len(cat.furniture_types)


def num_planes() -> int:
    k, f = _sizes()
    return TILE_PLANES + AGENT_PLANES + f + 1 + 2 * MAX_GOAL


def default_image_scale(view_radius: int) -> int:
    """Default pixels per cell of ``obs_mode="image"`` (module docstring)."""
    side = 2 * view_radius + 1
    need = max(NATURE_CNN_MIN, num_planes() + 1)
    return max(1, -(-need // side))


def _plane_bounds() -> np.ndarray:
    high = np.ones(num_planes(), np.uint8)
    high[TILE_PLANES + AGENT_PLANES + _sizes()[1]] = MAX_COUNT
    high[-2 * MAX_GOAL::2] = MAX_COUNT
    return high


def flat_scale(view_radius: int, max_units: int) -> np.ndarray:
    """Per entry of a flat observation, its largest raw value (1 for one-hot entries)."""
    k, f = _sizes()
    side = 2 * view_radius + 1
    goal_row = np.concatenate([np.ones(k + f), [max_units]])
    return np.concatenate([np.tile(_plane_bounds(), side * side), np.ones(HAND_CAPACITY * k),
                           np.tile(goal_row, MAX_GOAL)]).astype(np.float32)


def flat_space(view_radius: int, max_units: int) -> spaces.Box:
    """``obs_mode="flat"``'s space; ``max_units``: most units one goal row can miss."""
    d = len(flat_scale(view_radius, max_units))
    return spaces.Box(0.0, 1.0, (d,), np.float32)


def image_space(view_radius: int, scale: int) -> spaces.Box:
    side = (2 * view_radius + 1) * scale
    return spaces.Box(0, 255, (num_planes(), side, side), np.uint8)


def _eye(n: int) -> np.ndarray:
    """Lookup ``id -> one-hot`` with id 0 meaning "none" (an all-zero row)."""
    return np.eye(n + 1, dtype=np.uint8)[:, 1:]


def planes(images: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """``(n, S, S, 38)`` planes of a batch of array images ``(n, S, S, 4+K)`` and goals."""
    # The batched core builds these planes directly (orgteams.envs.vector.observe,
    # vector.functional.core); tests/envs/vector/test_vector_differential.py pins it to
    # this encoding.
    k, f = _sizes()
    n = len(images)
    tile = _eye(TILE_PLANES)[images[..., 0]]
    agent = _eye(AGENT_PLANES)[images[..., 2]]
    furniture = _eye(f)[images[..., 3]]
    counts = images[..., BASE_CHANNELS:]
    objects = counts.sum(axis=-1, dtype=np.uint8)[..., None]
    # Per goal row i: plane 2i counts row i's class here, plane 2i+1 marks row i's target
    # type while the row misses units; unused rows (class 0) stay zero. One gather for
    # the whole batch (the batched core encodes thousands of agents at once).
    goal = np.zeros(images.shape[:3] + (2 * MAX_GOAL,), np.uint8)
    cls = goals[..., 0].astype(np.intp)
    used = (cls > 0)[:, None, None, :]
    wanted = np.take_along_axis(counts, np.maximum(cls - 1, 0).reshape(n, 1, 1, -1), axis=-1)
    goal[..., 0::2] = np.where(used, wanted, 0)
    target = images[..., 3:4] == goals[:, None, None, :, 1]
    goal[..., 1::2] = target & used & (goals[..., 2] > 0)[:, None, None, :]
    return np.concatenate([tile, agent, furniture, objects, goal], axis=-1)


def encode_flat(images: np.ndarray, hands: np.ndarray, goals: np.ndarray,
                inverse_scale: np.ndarray) -> np.ndarray:
    """``(n, D)`` float32 flat observations (module docstring) of a batch;
    ``inverse_scale``: ``1 / flat_scale(...)``."""
    return flat_from_planes(planes(images, goals), hands, goals, inverse_scale)


def flat_from_planes(grid: np.ndarray, hands: np.ndarray, goals: np.ndarray,
                     inverse_scale: np.ndarray) -> np.ndarray:
    """:func:`encode_flat` from the ``(n, S, S, 38)`` planes (the batched core builds
    the planes itself and encodes them here)."""
    n = len(grid)
    return np.concatenate([grid.reshape(n, -1), flat_tail(hands, goals)], axis=1) \
        * inverse_scale


def flat_tail(hands: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """``(n, T)`` uint8: the entries of a flat observation after the view's planes (hand
    slots' class one-hot, then per goal row class one-hot, target one-hot, units
    missing), before scaling."""
    k, f = _sizes()
    n = len(hands)
    held = _eye(k)[hands].reshape(n, -1)
    rows = np.concatenate([_eye(k)[goals[..., 0]], _eye(f)[goals[..., 1]],
                           goals[..., 2:3]], axis=-1).reshape(n, -1)
    return np.concatenate([held, rows], axis=1)


def encode_image(images: np.ndarray, goals: np.ndarray, scale: int) -> np.ndarray:
    """``(n, 38, S*scale, S*scale)`` image observations of a batch."""
    return image_from_planes(planes(images, goals), scale)


def image_from_planes(p: np.ndarray, scale: int) -> np.ndarray:
    """:func:`encode_image` from the ``(n, S, S, 38)`` planes (overwritten)."""
    p *= image_factor()
    p = p.transpose(0, 3, 1, 2)
    if scale > 1:
        p = p.repeat(scale, axis=2).repeat(scale, axis=3)
    return np.ascontiguousarray(p)


def image_factor() -> np.ndarray:
    """Per plane: 255 for binary planes, :data:`COUNT_SCALE` for counts."""
    high = _plane_bounds()
    return np.where(high == 1, 255, COUNT_SCALE).astype(np.uint8)


def batch(observations: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """Stack array observations into ``(images, hands, goals)`` arrays."""
    return (np.stack([o["image"] for o in observations]),
            np.stack([o["hands"] for o in observations]),
            np.stack([o["goal"] for o in observations]))
