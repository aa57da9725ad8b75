"""Which households' state changed since the last step: what must be rebuilt.

Observations and action masks are functions of a household's state without its tick
(positions, hands, contents, open flags, goal rows and progress). With uniform random
actions most households stay the same from one tick to the next (most ids are invalid
where they are played), so the numpy core rebuilds masks and windows only for the
households whose state differs from the last step's (:class:`ChangeTracker`).
``tests/envs/test_vector_differential.py`` compares the result with the scalar env at
every tick and shows that a field left out of the comparison is caught.
"""

from __future__ import annotations

import numpy as np

from orgteams.envs.vector.batch import BatchState

UNSEEN = ("tick", "step_limit")  # BatchState fields no observation or mask reads


class ChangeTracker:
    """The batch's state at the last :meth:`remember`, compared by :meth:`changed`."""

    def __init__(self) -> None:
        self.last: dict[str, np.ndarray] | None = None

    def changed(self, s: BatchState) -> np.ndarray | None:
        """``(N,)`` bool: households whose state (all but the tick) differs from the
        remembered one; None (rebuild everything) before the first :meth:`remember`."""
        if self.last is None:
            return None
        out = np.zeros(len(s.pos), bool)
        for k, v in s.__dict__.items():
            if k not in UNSEEN:
                out |= (v != self.last[k]).reshape(len(v), -1).any(axis=1)
        return out

    def remember(self, s: BatchState) -> None:
        """Keep a copy of ``s`` (after the step's resets) for the next comparison."""
        if self.last is None:
            self.last = {k: v.copy() for k, v in s.__dict__.items() if k not in UNSEEN}
        else:
            for k, v in self.last.items():
                np.copyto(v, getattr(s, k))


__all__ = ["ChangeTracker", "UNSEEN"]
