"""Team rewards of a batch: :class:`orgteams.envs.core.rewards.TeamReward` restated with arrays.

Same levels, same arithmetic in the same order (so the floats are identical); the
per-episode "already paid" sets become boolean arrays. Pinned by
``tests/envs/vector/test_vector_differential.py`` (rewards compared at every tick).
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.core.rewards import SUBGOAL_BONUS
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.dynamics import TickEvents
from orgteams.envs.vector.tables import LayoutTables


class BatchReward:
    """The shared reward of each household's tick at one shaping level."""

    def __init__(self, level: str, num_envs: int, furniture: int, objects: int):
        self.level = level
        self.opened = np.zeros((num_envs, furniture), bool)  # right containers paid for
        self.picked = np.zeros((num_envs, objects), bool)  # goal objects paid for

    def reset(self, idx: np.ndarray) -> None:
        self.opened[idx] = False
        self.picked[idx] = False

    def __call__(self, t: LayoutTables, before_progress: np.ndarray,
                 before_contents: np.ndarray | None, s: BatchState, events: TickEvents,
                 done: np.ndarray) -> np.ndarray:
        reward = np.where(done, 1.0, 0.0)
        if self.level == "none":
            return reward
        units = s.goal_count.sum(axis=1)
        delta = s.progress.sum(axis=1) - before_progress.sum(axis=1)
        reward = reward + delta / units
        if self.level == "subgoals":
            reward = reward + self._subgoals(t, before_progress, before_contents, s,
                                             events) * SUBGOAL_BONUS / units
        return reward

    def _subgoals(self, t: LayoutTables, before_progress: np.ndarray,
                  before_contents: np.ndarray, s: BatchState, events: TickEvents
                  ) -> np.ndarray:
        """Per household, how many right containers and goal objects were newly found."""
        n = len(s.tick)
        found = np.zeros(n, np.int64)
        missing = before_progress < s.goal_count  # (N, G); unused rows have count 0
        e, a = np.nonzero(events.opened_container >= 0)
        if len(e):
            f = events.opened_container[e, a]
            new = ~self.opened[e, f]
            is_target = ((t.furniture_type[f][:, None] == s.goal_target[e]) & missing[e]).any(1)
            inside = before_contents[e, f]  # (M, cap + 1), -1 pads
            cls = np.where(inside >= 0, s.object_class[e[:, None], np.maximum(inside, 0)], -2)
            wanted = np.where(missing[e], s.goal_class[e], -3)  # (M, G)
            holds = (cls[:, :, None] == wanted[:, None, :]).any(axis=(1, 2))
            hit = new & (is_target | holds)
            self.opened[e[hit], f[hit]] = True
            np.add.at(found, e[hit], 1)
        e, a = np.nonzero(events.picked >= 0)
        if len(e):
            obj = events.picked[e, a]
            f = events.picked_from[e, a]
            new = ~self.picked[e, obj]
            cls = s.object_class[e, obj]
            row = (missing[e] & (s.goal_class[e] == cls[:, None])
                   & (s.goal_target[e] != t.furniture_type[f][:, None]))
            hit = new & row.any(axis=1)
            self.picked[e[hit], obj[hit]] = True
            np.add.at(found, e[hit], 1)
        return found


__all__ = ["BatchReward"]
