"""Team rewards and their shaping levels (``reward_shaping=`` of the household env).

All agents get the same reward each tick. With ``U`` the goal's total units:

==============  ===============================================================
level           reward per tick
==============  ===============================================================
``"none"``      ``+1`` at the tick the goal is complete (``False``)
``"units"``     also ``+1/U`` per goal unit placed, ``-1/U`` per unit taken away
                (``True``)
``"subgoals"``  also ``+SUBGOAL_BONUS/U`` the first time in the episode that
                each *right container* is opened (it holds an object of a class
                the goal still misses, or it is the target of an unmet goal row)
                and that each *goal object* is picked (its class is still missing
                and it was not on a target that counted it)
==============  ===============================================================

So an episode's return is at most ``2 + (#containers + #goal objects) * 0.1 / U``
(units taken away and put back are paid again only as often as they are undone).

The batched core restates these levels over arrays (:mod:`orgteams.envs.vector.rewards`),
pinned to them by ``tests/envs/vector/test_vector_differential.py``.
"""

from __future__ import annotations

from orgteams.envs.core.dynamics import Event
from orgteams.envs.core.state import HouseholdState

SHAPING_LEVELS = ("none", "units", "subgoals")
SUBGOAL_BONUS = 0.1


def shaping_level(value: bool | str) -> str:
    """``False``/``True`` or a level name -> the level name; raises on anything else."""
    if value is False or value is None:
        return "none"
    if value is True:
        return "units"
    if isinstance(value, str) and value in SHAPING_LEVELS:
        return value
    raise ValueError(f"reward_shaping must be True, False or one of {SHAPING_LEVELS}, "
                     f"got {value!r}")


class TeamReward:
    """Computes the shared reward of each tick at one shaping level."""

    def __init__(self, level: str):
        self.level = level
        self._opened: set[int] = set()
        self._picked: set[int] = set()

    def reset(self) -> None:
        """Forgets which containers were opened and which objects picked (a new episode)."""
        self._opened.clear()
        self._picked.clear()

    def __call__(self, before: HouseholdState, after: HouseholdState, events: list[Event],
                 done: bool) -> float:
        reward = 1.0 if done else 0.0
        if self.level == "none":
            return reward
        units = sum(after.scene.goal_counts)
        delta = sum(after.progress) - sum(before.progress)
        reward += delta / units
        if self.level == "subgoals" and events:
            reward += self._subgoals(before, events) * SUBGOAL_BONUS / units
        return reward

    def _subgoals(self, before: HouseholdState, events: list[Event]) -> int:
        scene = before.scene
        missing = [(p.cls, targets) for p, have, targets in
                   zip(scene.goal, before.progress, scene.goal_targets) if have < p.count]
        if not missing:
            return 0
        classes = scene.object_class
        found = 0
        for e in events:
            if e.type == "opened" and e.furniture >= 0 and e.furniture not in self._opened:
                f = e.furniture
                wanted = {c for c, _ in missing}
                if (any(f in t for _, t in missing)
                        or any(classes[o] in wanted for o in before.contents[f])):
                    self._opened.add(f)
                    found += 1
            elif e.type == "picked" and e.obj not in self._picked:
                cls = classes[e.obj]
                if any(c == cls and e.furniture not in t for c, t in missing):
                    self._picked.add(e.obj)
                    found += 1
        return found
