"""Plans behind the high-level actions: generators of primitive action ids.

A plan is a generator that :class:`~orgteams.envs.highlevel.HighLevelEnv` advances
once per tick: each ``yield`` is the agent's primitive action id for that tick
(see :mod:`orgteams.envs.actions`); returning ends the plan ("done"); raising
:class:`PlanFailed` ends it with a reason shown to the agent ("failed"). Plans read
the world after every tick, so they react to what teammates changed.

``PLANS`` maps each action kind (``explore``, ``goto``, ``check``, ``grab``, ``put``,
``wait``, ``primitive``) to its plan function ``plan(env, agent, target) -> Plan``. A
:class:`Runner` holds one agent's current plan and its status.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orgteams.envs.actions import Verb, encode
from orgteams.envs.navigation import INF

if TYPE_CHECKING:
    from orgteams.envs.highlevel import HighLevelAction, HighLevelEnv

PLAN_TICK_LIMIT = 400  # a plan running this long fails ("gave up"): a hard bound
STUCK_LIMIT = 25  # ticks a walk may go without getting closer before it fails

Plan = Generator[int, None, None]


class PlanFailed(Exception):
    """A plan cannot go on; the message is the reason shown to the agent."""


@dataclass
class Runner:
    """One agent's current high-level action, its plan and where it stands."""

    action: HighLevelAction | None = None
    plan: Plan | None = None
    status: str = "idle"  # one of highlevel.STATUSES
    failure_reason: str = ""
    pending: int = 0  # the primitive action for the next tick
    ticks: int = 0
    idle: bool = False

    def advance(self) -> None:
        """Take the plan's next primitive action, or record that it ended."""
        try:
            if self.ticks >= PLAN_TICK_LIMIT:
                raise PlanFailed(f"gave up {self.action.id} after {self.ticks} ticks")
            self.pending = next(self.plan)
            self.ticks += 1
        except StopIteration:
            self.status, self.pending, self.plan = "done", 0, None
        except PlanFailed as exc:
            self.status, self.pending, self.plan, self.failure_reason = "failed", 0, None, str(exc)


# ---- helpers: walking, finding, facing, opening ----
def walk(env: HighLevelEnv, agent: str, goals: frozenset[int], what: str) -> Plan:
    """Walk until standing on one of ``goals``; fail when no progress is made."""
    walker = env.nav.walker(env.base.agent_index[agent], goals)
    best, since_best = INF, 0
    while True:
        world = env.base.world
        d = walker.remaining(world)
        if d == 0:
            return
        if d >= INF:
            raise PlanFailed(f"no path to {what}")
        if d < best:
            best, since_best = d, 0
        else:
            since_best += 1
            if since_best > STUCK_LIMIT:
                raise PlanFailed(f"could not reach {what}: blocked for {since_best} ticks")
        act = walker.next_action(world, *env.yielding_cells(agent))
        if act < 0:
            raise PlanFailed(f"no path to {what}")
        yield act


def furniture_index(env: HighLevelEnv, name: str) -> int:
    for i, f in enumerate(env.base.world.scene.layout.furniture):
        if f.name == name:
            return i
    raise PlanFailed(f"there is no {name}")


def face(env: HighLevelEnv, agent: str, f: int) -> int:
    """The direction from ``agent`` to furniture ``f`` (adjacent)."""
    world = env.base.world
    cell = world.scene.layout.furniture[f].cell
    here = world.agent_pos[env.base.agent_index[agent]]
    return env.nav.direction_to(here, cell[0] * world.scene.width + cell[1])


def open_container(env: HighLevelEnv, agent: str, f: int) -> Plan:
    """Open container ``f`` (already adjacent) if the agent sees it closed."""
    mem = env.memory(agent)
    name = env.base.world.scene.layout.furniture[f].name
    for _ in range(3):
        if mem.furniture[name].open:
            return
        yield encode(Verb.OPEN, face(env, agent, f))
    raise PlanFailed(f"could not open the {name}")


# ---- one plan per action kind ----
def plan_wait(env: HighLevelEnv, agent: str, target: str) -> Plan:
    yield 0


def plan_primitive(env: HighLevelEnv, agent: str, target: str) -> Plan:
    """Exactly one tick of primitive action ``target`` (validated by the env)."""
    yield int(target)


def plan_goto(env: HighLevelEnv, agent: str, target: str) -> Plan:
    room = env.base.world.scene.layout.rooms.index(target)
    yield from walk(env, agent, env.nav.room_goal(room), f"the {target}")


def plan_explore(env: HighLevelEnv, agent: str, target: str) -> Plan:
    yield from plan_goto(env, agent, target)
    mem = env.memory(agent)
    a = env.base.agent_index[agent]
    nav = env.nav
    while True:
        todo = [furniture_index(env, n) for n in mem.containers_unobserved(target)]
        if not todo:
            return
        here = env.base.world.agent_pos[a]
        f = min(todo, key=lambda i: nav.distance(here, nav.furniture_goal(i)))
        name = env.base.world.scene.layout.furniture[f].name
        yield from walk(env, agent, nav.furniture_goal(f), f"the {name}")
        yield from open_container(env, agent, f)


def plan_check(env: HighLevelEnv, agent: str, target: str) -> Plan:
    f = furniture_index(env, target)
    yield from walk(env, agent, env.nav.furniture_goal(f), f"the {target}")
    yield from open_container(env, agent, f)


def plan_grab(env: HighLevelEnv, agent: str, target: str) -> Plan:
    mem = env.memory(agent)
    a = env.base.agent_index[agent]
    scene = env.base.world.scene
    obj = scene.objects.index(target)
    last_place = "place it was"
    walking, walk_to = None, ""
    while True:
        world = env.base.world
        if obj in world.hands[a]:
            return
        if len(world.hands[a]) >= 2:
            raise PlanFailed("both hands are full")
        belief = mem.objects.get(target)
        if belief is None or belief.kind != "furniture":
            raise PlanFailed(f"{target} is not {last_place} any more"
                             if belief is None else f"{target} is held by {belief.location}")
        f = furniture_index(env, belief.location)
        prep = "in" if scene.is_container[f] else "on"
        last_place = f"{prep} the {belief.location}"
        goals = env.nav.furniture_goal(f)
        if env.nav.distance(world.agent_pos[a], goals) > 0:
            # One walking step at a time, so a changed belief re-targets the walk.
            if walking is None or walk_to != belief.location:
                walk_to = belief.location
                walking = walk(env, agent, goals, f"the {walk_to}")
            step = next(walking, None)
            if step is not None:
                yield step
                continue
        if not mem.furniture[belief.location].open:
            yield from open_container(env, agent, f)
            continue
        if obj not in world.contents[f]:  # seen not there: memory forgets it
            raise PlanFailed(f"{target} is not {last_place} any more")
        yield encode(Verb.PICK, face(env, agent, f), world.contents[f].index(obj))
        if obj not in env.base.world.hands[a] and obj in env.base.world.contents[f]:
            raise PlanFailed(f"could not pick {target}")


def plan_put(env: HighLevelEnv, agent: str, target: str) -> Plan:
    a = env.base.agent_index[agent]
    scene = env.base.world.scene
    f = furniture_index(env, target)
    held = env.base.world.hands[a]
    if not held:
        raise PlanFailed("hands are empty: nothing to put")
    ftype = scene.layout.furniture[f].type
    wanted_classes = {p.cls for p in scene.goal if p.target == ftype}
    objs = [o for o in held if scene.object_class[o] in wanted_classes] or list(held)
    yield from walk(env, agent, env.nav.furniture_goal(f), f"the {target}")
    yield from open_container(env, agent, f)
    for obj in objs:
        world = env.base.world
        if obj not in world.hands[a]:
            continue
        if len(world.contents[f]) >= scene.capacity[f]:
            raise PlanFailed(f"the {target} is full")
        yield encode(Verb.PUT, face(env, agent, f), world.hands[a].index(obj))


PLANS: dict[str, Callable[[HighLevelEnv, str, str], Plan]] = {
    "explore": plan_explore, "goto": plan_goto, "check": plan_check, "grab": plan_grab,
    "put": plan_put, "wait": plan_wait, "primitive": plan_primitive,
}

__all__ = ["PLANS", "PLAN_TICK_LIMIT", "STUCK_LIMIT", "Plan", "PlanFailed", "Runner", "walk",
           "furniture_index", "face", "open_container"]
