"""Plans behind the high-level actions: resumable iterators of primitive action ids.

A plan is an iterator that :class:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv` advances
once per tick: each ``next(plan)`` is the agent's primitive action id for that tick
(see :mod:`orgteams.envs.core.actions`); ``StopIteration`` ends the plan ("done");
raising :class:`PlanFailed` ends it with a reason shown to the agent ("failed"). Plans
read the world after every tick, so they react to what teammates changed.

Plans are small objects whose progress is plain attributes (a phase, a sub-plan, a
counter) rather than generators, so an env in the middle of an episode pickles and
its copy goes on exactly as the original would. Like a generator's body, a plan does
its first lookups on its first tick (:class:`Deferred`).

``PLANS`` maps each action kind (``explore``, ``goto``, ``check``, ``grab``, ``put``,
``wait``, ``primitive``) to its plan function ``plan(env, agent, target) -> Plan``. A
:class:`Runner` holds one agent's current plan and its status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orgteams.envs.core.actions import Verb, encode
from orgteams.envs.core.navigation import INF

if TYPE_CHECKING:
    from orgteams.envs.highlevel.highlevel_env import HighLevelAction, HighLevelEnv

PLAN_TICK_LIMIT = 400  # a plan running this long fails ("gave up"): a hard bound
STUCK_LIMIT = 25  # ticks a walk may go without getting closer before it fails


class PlanFailed(Exception):
    """A plan cannot go on; the message is the reason shown to the agent."""


class Plan:
    """A resumable plan: ``next(plan)`` is the next primitive action. Once it has ended
    (done or failed) it stays ended, as an exhausted generator does."""

    _over = False

    def __iter__(self) -> Plan:
        return self

    def __next__(self) -> int:
        if self._over:
            raise StopIteration
        try:
            return self._next()
        except (StopIteration, PlanFailed):
            self._over = True
            raise

    def _next(self) -> int:
        raise NotImplementedError

    def _sub(self) -> int | None:
        """The running sub-plan's next action, or None once it is done (it is dropped)."""
        try:
            return next(self.sub)
        except StopIteration:
            self.sub = None
            return None


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
    obstacle: bool = True  # an idle agent teammates may not push aside

    def advance(self) -> None:
        """Take the plan's next primitive action, or record that it ended."""
        try:
            if self.ticks >= PLAN_TICK_LIMIT:
                raise PlanFailed(f"gave up {self.action.id} after {self.ticks} ticks")
            plan = self.plan
            self.pending = next(plan)
            self.ticks += 1
            if type(plan) is Deferred:
                # built and stepped: its plan is stepped directly from now on, as the
                # Deferred would (two calls fewer per agent a tick, 256 in a crowd)
                self.plan = plan.sub
        except StopIteration:
            self.status, self.pending, self.plan = "done", 0, None
        except PlanFailed as exc:
            self.status, self.pending, self.plan, self.failure_reason = "failed", 0, None, str(exc)


# ---- helpers: walking, finding, facing, opening ----
class Walk(Plan):
    """Walk until standing on one of ``goals``; fail when no progress is made."""

    def __init__(self, env: HighLevelEnv, agent: str, goals: frozenset[int], what: str):
        self.env, self.agent, self.what = env, agent, what
        self.walker = env.nav.walker(env.base.agent_index[agent], goals)
        self.best, self.since_best = INF, 0

    def _next(self) -> int:
        world = self.env.base.world
        d = self.walker.remaining(world)
        if d == 0:
            raise StopIteration
        if d >= INF:
            raise PlanFailed(f"no path to {self.what}")
        if d < self.best:
            self.best, self.since_best = d, 0
        else:
            self.since_best += 1
            if self.since_best > STUCK_LIMIT:
                raise PlanFailed(f"could not reach {self.what}: blocked for "
                                 f"{self.since_best} ticks")
        act = self.walker.next_action(world, self.env.crowd.giving_way(self.agent))
        if act < 0:
            raise PlanFailed(f"no path to {self.what}")
        return act


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


class OpenContainer(Plan):
    """Open container ``f`` (already adjacent) if the agent sees it closed: three tries."""

    def __init__(self, env: HighLevelEnv, agent: str, f: int):
        self.env, self.agent, self.f = env, agent, f
        self.name = env.base.world.scene.layout.furniture[f].name
        self.tries = 0

    def _next(self) -> int:
        if self.tries >= 3:
            raise PlanFailed(f"could not open the {self.name}")
        if self.env.memory(self.agent).furniture[self.name].open:
            raise StopIteration
        self.tries += 1
        return encode(Verb.OPEN, face(self.env, self.agent, self.f))


class Deferred(Plan):
    """Builds ``build(env, agent, target)`` on the first tick (lookups that may fail then
    fail the plan, as in a generator's body)."""

    def __init__(self, build: Callable[..., Plan], env: HighLevelEnv, agent: str, target: str):
        self.build, self.args, self.sub = build, (env, agent, target), None

    def _next(self) -> int:
        if self.sub is None:
            self.sub = self.build(*self.args)
        return next(self.sub)


# ---- one plan per action kind ----
class Once(Plan):
    """One tick of one action: ``wait`` (0) or ``primitive:<id>`` (validated by the env)."""

    def __init__(self, env: HighLevelEnv, agent: str, target: str):
        self.action = int(target) if target else 0
        self.done = False

    def _next(self) -> int:
        if self.done:
            raise StopIteration
        self.done = True
        return self.action


def plan_goto(env: HighLevelEnv, agent: str, target: str) -> Plan:
    room = env.base.world.scene.layout.rooms.index(target)
    return Walk(env, agent, env.nav.room_goal(room), f"the {target}")


class Explore(Plan):
    """Walk into the room, then open each container there never seen open, nearest first."""

    def __init__(self, env: HighLevelEnv, agent: str, target: str):
        self.env, self.agent, self.target = env, agent, target
        self.sub: Plan | None = plan_goto(env, agent, target)
        self.phase, self.f = "goto", -1

    def _next(self) -> int:
        env, agent = self.env, self.agent
        while True:
            if self.sub is not None:
                act = self._sub()
                if act is not None:
                    return act
            if self.phase == "walk":  # next to container f: open it
                self.sub, self.phase = OpenContainer(env, agent, self.f), "open"
                continue
            mem = env.memory(agent)
            todo = [furniture_index(env, n) for n in mem.containers_unobserved(self.target)]
            if not todo:
                raise StopIteration
            here = env.base.world.agent_pos[env.base.agent_index[agent]]
            nav = env.nav
            self.f = min(todo, key=lambda i: nav.distance(here, nav.furniture_goal(i)))
            name = env.base.world.scene.layout.furniture[self.f].name
            self.sub = Walk(env, agent, nav.furniture_goal(self.f), f"the {name}")
            self.phase = "walk"


def plan_check(env: HighLevelEnv, agent: str, target: str) -> Plan:
    f = furniture_index(env, target)
    return Chain(Walk(env, agent, env.nav.furniture_goal(f), f"the {target}"),
                 OpenContainer(env, agent, f))


class Chain(Plan):
    """Sub-plans one after another."""

    def __init__(self, *plans: Plan):
        self.plans, self.sub = list(plans[1:]), plans[0]

    def _next(self) -> int:
        while True:
            act = self._sub()
            if act is not None:
                return act
            if not self.plans:
                raise StopIteration
            self.sub = self.plans.pop(0)


class Grab(Plan):
    """Walk to where the agent believes the object is, open its container, pick it."""

    def __init__(self, env: HighLevelEnv, agent: str, target: str):
        self.env, self.agent, self.target = env, agent, target
        self.a = env.base.agent_index[agent]
        self.obj = env.base.world.scene.objects.index(target)
        self.last_place = "place it was"
        self.walking: Walk | None = None
        self.walk_to = ""
        self.sub: Plan | None = None
        self.picking = -1  # the furniture picked from last tick: check that it worked

    def _next(self) -> int:
        env, a, obj, target = self.env, self.a, self.obj, self.target
        mem = env.memory(self.agent)
        scene = env.base.world.scene
        if self.picking >= 0:
            f, self.picking = self.picking, -1
            world = env.base.world
            if obj not in world.hands[a] and obj in world.contents[f]:
                raise PlanFailed(f"could not pick {target}")
        while True:
            if self.sub is not None:
                act = self._sub()
                if act is not None:
                    return act
                continue
            world = env.base.world
            if obj in world.hands[a]:
                raise StopIteration
            if len(world.hands[a]) >= 2:
                raise PlanFailed("both hands are full")
            belief = mem.objects.get(target)
            if belief is None or belief.kind != "furniture":
                raise PlanFailed(f"{target} is not {self.last_place} any more"
                                 if belief is None else f"{target} is held by {belief.location}")
            f = furniture_index(env, belief.location)
            prep = "in" if scene.is_container[f] else "on"
            self.last_place = f"{prep} the {belief.location}"
            goals = env.nav.furniture_goal(f)
            if env.nav.distance(world.agent_pos[a], goals) > 0:
                # One walking step at a time, so a changed belief re-targets the walk.
                if self.walking is None or self.walk_to != belief.location:
                    self.walk_to = belief.location
                    self.walking = Walk(env, self.agent, goals, f"the {self.walk_to}")
                step = next(self.walking, None)
                if step is not None:
                    return step
            if not mem.furniture[belief.location].open:
                self.sub = OpenContainer(env, self.agent, f)
                continue
            if obj not in world.contents[f]:  # seen not there: memory forgets it
                raise PlanFailed(f"{target} is not {self.last_place} any more")
            self.picking = f
            return encode(Verb.PICK, face(env, self.agent, f), world.contents[f].index(obj))


class Put(Plan):
    """Walk to the furniture, open it, put the held objects the goal wants there (or all)."""

    def __init__(self, env: HighLevelEnv, agent: str, target: str):
        self.env, self.agent, self.target = env, agent, target
        self.a = a = env.base.agent_index[agent]
        scene = env.base.world.scene
        self.f = f = furniture_index(env, target)
        held = env.base.world.hands[a]
        if not held:
            raise PlanFailed("hands are empty: nothing to put")
        ftype = scene.layout.furniture[f].type
        wanted_classes = {p.cls for p in scene.goal if p.target == ftype}
        self.objs = [o for o in held if scene.object_class[o] in wanted_classes] or list(held)
        self.sub: Plan | None = Chain(Walk(env, agent, env.nav.furniture_goal(f),
                                           f"the {target}"), OpenContainer(env, agent, f))

    def _next(self) -> int:
        if self.sub is not None:
            act = self._sub()
            if act is not None:
                return act
        env, a, f = self.env, self.a, self.f
        scene = env.base.world.scene
        while self.objs:
            obj = self.objs.pop(0)
            world = env.base.world
            if obj not in world.hands[a]:
                continue
            if len(world.contents[f]) >= scene.capacity[f]:
                raise PlanFailed(f"the {self.target} is full")
            return encode(Verb.PUT, face(env, self.agent, f), world.hands[a].index(obj))
        raise StopIteration


def _deferred(build: Callable[..., Plan]) -> Callable[[HighLevelEnv, str, str], Plan]:
    def make(env: HighLevelEnv, agent: str, target: str) -> Plan:
        return Deferred(build, env, agent, target)
    return make


PLANS: dict[str, Callable[[HighLevelEnv, str, str], Plan]] = {
    "explore": _deferred(Explore), "goto": _deferred(plan_goto), "check": _deferred(plan_check),
    "grab": _deferred(Grab), "put": _deferred(Put), "wait": Once, "primitive": Once,
}

__all__ = ["PLANS", "PLAN_TICK_LIMIT", "STUCK_LIMIT", "Plan", "PlanFailed", "Runner", "Walk",
           "OpenContainer", "furniture_index", "face"]
