"""A priority shift: the episode's goal changes mid-episode to another task's.

:func:`shift_goal` keeps the objects in the house and moves the goal to task ``T``:
each predicate of the current goal whose object class ``T`` also uses gets ``T``'s
relation and target (its count kept); predicates ``T`` has no use for are dropped.
The world's scene (task, goal), its progress, the array observer's goal rows and the
reward's per-goal memory change together, so observations, ``describe_goal``,
success and rewards all follow the new goal from the next tick. Objects already on
the old target count only if that is also the new target.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from orgteams.envs.core.tasks import Predicate, load_task
from orgteams.envs.observe.array_obs import ArrayObserver
from orgteams.errors import UserError

if TYPE_CHECKING:
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

__all__ = ["shifted_goal", "shift_goal"]


def shifted_goal(goal: tuple[Predicate, ...], task: str, furniture_types: set[str]
                 ) -> tuple[Predicate, ...]:
    """The goal of ``task`` over the classes of ``goal`` (see the module docstring).

    Raises:
        UserError: ``task`` is unknown, shares no object class with ``goal``, or needs
            a target the layout lacks.
    """
    spec = load_task(task)
    by_class: dict[str, tuple[str, str]] = {}
    for relation, cls, target in spec.candidates + spec.required:
        by_class.setdefault(cls, (relation, target))
    new = tuple(Predicate(by_class[p.cls][0], p.cls, by_class[p.cls][1], p.count)
                for p in goal if p.cls in by_class)
    if not new:
        classes = ", ".join(sorted({p.cls for p in goal}))
        raise UserError(f"priority shift to task {task!r}: it uses none of the goal's "
                        f"object classes ({classes})")
    missing = sorted({p.target for p in new} - furniture_types)
    if missing:
        raise UserError(f"priority shift to task {task!r}: the layout has no "
                        f"{', '.join(missing)}")
    return new


def shift_goal(env: HighLevelEnv, task: str) -> tuple[tuple[Predicate, ...],
                                                      tuple[Predicate, ...]]:
    """Put ``task``'s goal in force now; returns ``(old goal, new goal)``.

    Raises:
        UserError: As :func:`shifted_goal`; the episode is unchanged then.
    """
    base = env.base
    world = base.world
    scene = world.scene
    types = {f.type for f in scene.layout.furniture}
    goal = shifted_goal(scene.goal, task, types)
    new_scene = replace(scene, task=load_task(task).name, goal=goal)
    base.world = replace(world, scene=new_scene, progress=())  # () recomputes progress
    base._observer = ArrayObserver(new_scene, base.view_radius, base.full_observability,
                                   previous=base._observer)
    base._reward.reset()  # its "first time" memory was about the old goal
    return scene.goal, goal
