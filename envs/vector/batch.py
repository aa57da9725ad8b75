"""A batch of household states as fixed-shape numpy arrays, and the way in and out.

One :class:`BatchState` holds ``N`` households of one layout, task and team size.
``pack`` writes a scalar :class:`HouseholdState` into row ``i`` and ``unpack`` reads
row ``i`` back as one, so a differential test can compare the two cores state by
state. Object ids are the scalar ids (positions in ``scene.objects``); -1 pads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from orgteams.envs.core.actions import HAND_CAPACITY
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.core.tasks import MAX_GOAL_PREDICATES, TaskSpec
from orgteams.envs.observe.array_obs import MAX_GOAL
from orgteams.envs.vector.tables import LayoutTables


def max_objects(task: TaskSpec) -> int:
    """Most objects an episode of ``task`` can have (make_episode: every goal unit, up to
    ``extra_objects`` more per goal row, and the distractors)."""
    return task.units[1] + MAX_GOAL_PREDICATES * task.extra_objects + task.distractors


@dataclass(eq=False)
class BatchState:
    """The dynamic arrays of ``N`` households plus each episode's goal and objects."""

    tick: np.ndarray  # (N,) int64
    pos: np.ndarray  # (N, A) int64 flat cells
    hands: np.ndarray  # (N, A, HAND_CAPACITY + 1) object ids in pick order, -1 pads
    held: np.ndarray  # (N, A) objects held
    contents: np.ndarray  # (N, F, max_capacity + 1) object ids in placement order, -1 pads
    count: np.ndarray  # (N, F) objects on / in each furniture
    container_open: np.ndarray  # (N, F) bool (surfaces True)
    door_open: np.ndarray  # (N, D) bool
    object_class: np.ndarray  # (N, O) catalog class id per object id, -1 pads
    goal_class: np.ndarray  # (N, 5) class id per goal row, -1 unused
    goal_target: np.ndarray  # (N, 5) furniture type id per goal row, -1 unused
    goal_count: np.ndarray  # (N, 5) units each row needs, 0 unused
    progress: np.ndarray  # (N, 5) satisfied units per row (capped at goal_count)
    step_limit: np.ndarray  # (N,) the scene's tick limit

    @classmethod
    def empty(cls, n: int, agents: int, tables: LayoutTables, objects: int) -> BatchState:
        f, d = len(tables.capacity), len(tables.door_cell)
        i64 = np.int64
        return cls(
            tick=np.zeros(n, i64), pos=np.zeros((n, agents), i64),
            hands=np.full((n, agents, HAND_CAPACITY + 1), -1, i64),
            held=np.zeros((n, agents), i64),
            contents=np.full((n, f, tables.max_capacity + 1), -1, i64),
            count=np.zeros((n, f), i64), container_open=np.ones((n, f), bool),
            door_open=np.zeros((n, d), bool), object_class=np.full((n, objects), -1, i64),
            goal_class=np.full((n, MAX_GOAL), -1, i64),
            goal_target=np.full((n, MAX_GOAL), -1, i64),
            goal_count=np.zeros((n, MAX_GOAL), i64), progress=np.zeros((n, MAX_GOAL), i64),
            step_limit=np.zeros(n, i64))

    @property
    def num_envs(self) -> int:
        return len(self.tick)

    def take(self, idx: np.ndarray) -> BatchState:
        """A new batch of rows ``idx`` (copies)."""
        return BatchState(**{k: v[idx] for k, v in self.__dict__.items()})

    def pack(self, i: int, state: HouseholdState) -> None:
        """Write ``state`` into row ``i`` (each household's reset comes here)."""
        scene = state.scene
        if len(scene.objects) > self.object_class.shape[1]:
            raise RuntimeError(f"episode has {len(scene.objects)} objects; the batch holds "
                               f"{self.object_class.shape[1]} (max_objects is wrong)")
        classes, types = _catalog_ids()
        self.tick[i] = state.tick
        self.pos[i] = state.agent_pos
        self.hands[i] = -1
        for a, held in enumerate(state.hands):
            if held:
                self.hands[i, a, :len(held)] = held
        self.held[i] = [len(x) for x in state.hands]
        self.contents[i] = -1
        w = self.contents.shape[2]  # one flat index list, not one slice per furniture
        self.contents[i].put([f * w + j for f, inside in enumerate(state.contents)
                              for j in range(len(inside))],
                             [o for inside in state.contents for o in inside])
        self.count[i] = [len(x) for x in state.contents]
        self.container_open[i] = state.container_open
        self.door_open[i] = state.door_open
        self.object_class[i] = -1
        self.object_class[i, :len(scene.objects)] = [classes[c] for c in scene.object_class]
        g = len(scene.goal)
        self.goal_class[i] = -1
        self.goal_target[i] = -1
        self.goal_count[i] = 0
        self.progress[i] = 0
        self.goal_class[i, :g] = [classes[p.cls] for p in scene.goal]
        self.goal_target[i, :g] = [types[p.target] for p in scene.goal]
        self.goal_count[i, :g] = scene.goal_counts
        self.progress[i, :g] = state.progress
        self.step_limit[i] = scene.step_limit

    def unpack(self, i: int, scene: Scene) -> HouseholdState:
        """Row ``i`` as a scalar state on ``scene`` (the scene it was packed from)."""
        agents = self.pos.shape[1]
        return HouseholdState(
            scene=scene, tick=int(self.tick[i]), agent_pos=self.pos[i].tolist(),
            hands=[tuple(self.hands[i, a, :self.held[i, a]].tolist()) for a in range(agents)],
            contents=[tuple(row[:n].tolist()) for row, n in zip(self.contents[i],
                                                                self.count[i])],
            container_open=self.container_open[i].tolist(),
            door_open=self.door_open[i].tolist(),
            progress=tuple(self.progress[i, :len(scene.goal)].tolist()))


@functools.cache
def _catalog_ids() -> tuple[dict[str, int], dict[str, int]]:
    """Catalog class ids and furniture type ids by name (``Catalog.class_id`` as dicts)."""
    cat = load_catalog()
    return ({c: cat.class_id(c) for c in cat.object_glyphs},
            {t: cat.furniture_type_id(t) for t in cat.furniture})


__all__ = ["BatchState", "max_objects"]
