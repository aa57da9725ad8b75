"""Discrete high-level actions for RL: stable option slots, masks and per-slot features.

``HighLevelEnv(action_mode="discrete")`` gives each agent ``Discrete(n)`` over slots
fixed by the layout and task, in this order (the same every episode)::

    explore:<room> x rooms, goto:<room> x rooms, check:<container> x containers,
    grab:<object k> x max_objects, put:<furniture> x furniture, wait, continue

``grab`` slot ``k`` is the episode's ``k``-th object (``scene.objects[k]``);
``max_objects`` is the most objects the task can place in an episode. A slot is
*available* exactly when its id is in ``HighLevelEnv.available_actions(agent)``;
``info[agent]["action_mask"]`` (int8) holds that per slot.

With ``obs_mode="array"`` each agent observes a ``Dict``: ``hands`` and ``goal`` as
in the primitive env's array observation, and ``slots``, ``(n, 4)`` uint8 per slot:

====  =====================================================================
0     available now (the mask)
1     this slot's action is the agent's running plan
2     useful for the goal, from the agent's memory: a room or container
      believed to hold an object the goal still misses (or a container never
      seen open), an object of a missing class, a target furniture of an unmet
      goal row
3     walking distance to the slot's place (capped at 254; 255: none/unknown)
====  =====================================================================
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import Layout
from orgteams.envs.core.tasks import MAX_GOAL_PREDICATES, TaskSpec

SLOT_FEATURES = 4
FAR = 255


def max_objects(task: TaskSpec) -> int:
    """The most objects an episode of ``task`` can have (see ``episode.make_episode``)."""
    most = task.units[1]
    return most + min(most, MAX_GOAL_PREDICATES) * task.extra_objects + task.distractors


class OptionSlots:
    """The slot table of one layout and task (module docstring)."""

    def __init__(self, layout: Layout, task: TaskSpec):
        cat = load_catalog()
        rooms = list(layout.rooms)
        containers = [f.name for f in layout.furniture if cat.furniture[f.type].is_container]
        self.max_objects = max_objects(task)
        self.kinds: list[tuple[str, str]] = (
            [("explore", r) for r in rooms] + [("goto", r) for r in rooms]
            + [("check", c) for c in containers] + [("grab", str(k))
                                                    for k in range(self.max_objects)]
            + [("put", f.name) for f in layout.furniture] + [("wait", ""), ("continue", "")])
        self.n = len(self.kinds)
        self.grab_base = 2 * len(rooms) + len(containers)

    def ids(self, objects: tuple[str, ...]) -> list[str | None]:
        """Slot -> action id in an episode with these objects (None: no such object)."""
        out: list[str | None] = []
        for kind, target in self.kinds:
            if kind == "grab":
                k = int(target)
                out.append(f"grab:{objects[k]}" if k < len(objects) else None)
            else:
                out.append(f"{kind}:{target}" if target else kind)
        return out

    def observation_space(self, base_space: spaces.Dict) -> spaces.Dict:
        return spaces.Dict({"slots": spaces.Box(0, 255, (self.n, SLOT_FEATURES), np.uint8),
                            "hands": base_space["hands"], "goal": base_space["goal"]})


def slot_features(env, agent: str, ids: list[str | None], available: set[str]) -> np.ndarray:
    """``(n, 4)`` features of ``agent``'s slots now (module docstring)."""
    world = env.base.world
    scene = world.scene
    lay = scene.layout
    mem = env.memory(agent)
    nav = env.nav
    here = world.agent_pos[env.base.agent_index[agent]]
    missing = [p for p, have in zip(scene.goal, world.progress) if have < p.count]
    need_cls = {p.cls for p in missing}
    need_target = {p.target for p in missing}
    furn_index = {f.name: i for i, f in enumerate(lay.furniture)}
    current = env.current(agent)
    out = np.zeros((len(ids), SLOT_FEATURES), np.uint8)
    out[:, 3] = FAR

    def holds_needed(name: str) -> bool:
        b = mem.furniture.get(name)
        if b is None:
            return False
        if b.contents is None:
            return b.is_container
        return any(o.rpartition("_")[0] in need_cls for o in b.contents)

    def dist(goals: frozenset[int]) -> int:
        return min(nav.distance(here, goals), FAR - 1)

    for s, ident in enumerate(ids):
        if ident is None:
            continue
        out[s, 0] = ident in available
        out[s, 1] = current is not None and current.id == ident
        kind, _, target = ident.partition(":")
        if kind in ("explore", "goto"):
            room = lay.rooms.index(target)
            names = [f.name for f in lay.furniture if f.room == room]
            out[s, 2] = any(holds_needed(n) or (n in mem.furniture and
                                                mem.furniture[n].type in need_target)
                            for n in names)
            out[s, 3] = dist(nav.room_goal(room))
        elif kind in ("check", "put"):
            f = furn_index[target]
            useful = (holds_needed(target) if kind == "check"
                      else lay.furniture[f].type in need_target)
            out[s, 2] = useful
            out[s, 3] = dist(nav.furniture_goal(f))
        elif kind == "grab":
            out[s, 2] = target.rpartition("_")[0] in need_cls
            belief = mem.objects.get(target)
            if belief is not None and belief.kind == "furniture":
                out[s, 3] = dist(nav.furniture_goal(furn_index[belief.location]))
    return out
