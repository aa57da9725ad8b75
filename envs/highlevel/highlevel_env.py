"""High-level actions over the household: a PettingZoo ParallelEnv in decision rounds.

Each agent picks a :class:`HighLevelAction` (the paper's ``[goexplore] <kitchen>``,
``[gocheck] <fridge>``, ``[gograb] <cupcake_1>``, ``[goput] <coffee_table>``,
``[wait]``), which runs over several primitive ticks of the wrapped
:class:`~orgteams.envs.household.HouseholdEnv`. One :meth:`HighLevelEnv.step` (a
*decision round*) runs ticks until at least one agent finished or failed its plan
(so needs a new decision), or the episode ends; it always runs at least one tick.

====================  =====================================================================
id                    what the plan does
====================  =====================================================================
``explore:<room>``    walk into the room, then open each container there never seen open,
                      nearest first; done when every container there has been observed
``goto:<room>``       walk into the room
``check:<furn>``      walk next to the container and open it
``grab:<obj>``        walk to where the agent believes the object is, open its container if
                      needed, pick it; fails ("cupcake_1 is not on the kitchen_table any
                      more", "both hands are full") when that is impossible
``put:<furn>``        walk there, open it if it is a container, put every held object the goal
                      wants on/in that furniture type; when none of the held objects match,
                      put all held objects there; fails when it is full or hands are empty
``wait``              wait one tick
``continue``          keep the current plan (only while one is running)
``primitive:<id>``    play primitive action ``<id>`` (:mod:`orgteams.envs.core.actions`) for
                      exactly one tick; never listed in :meth:`~HighLevelEnv.available_actions`
                      (LLM prompts are unchanged): it lets a person at the keyboard (or a
                      per-tick policy) play beside planners, who keep their plans
====================  =====================================================================

A ``primitive:<id>`` agent is never pushed aside and is not walked into: its tick
is exactly the action it chose, and the round ends after that one tick (it needs a
new decision), so such a player decides every tick.

Available actions come from the agent's :class:`~orgteams.envs.observe.memory.AgentMemory`
only: ``explore``/``goto`` every room of the floor plan, ``check`` every container
seen, ``grab`` every object believed on/in a piece of furniture, ``put`` every
piece of furniture seen (while holding something). An agent that needs a decision
and is given none waits one tick. Navigation is :mod:`orgteams.envs.core.navigation`;
a walk that makes no progress for long fails with a reason (never a hang). The
plans themselves (generators of primitive actions) are :mod:`orgteams.envs.highlevel.plans`.

Crowding: a lower agent index has right of way. An agent that is waiting (its plan
is ``wait`` or it awaits a decision), or has a higher index and is only walking,
is pushed one cell aside when a teammate walks into it (its tick becomes that
move); an agent boxed into a dead end is given way instead. Idle agents
(:meth:`HighLevelEnv.set_idle`) never move: they are obstacles, unless made idle with
``obstacle=False`` (a removed team member): those are pushed aside like waiting ones.

For RL, ``action_mode="discrete"`` gives each agent a ``Discrete`` space over stable
option slots with ``info[agent]["action_mask"]``, and ``obs_mode="array"`` per-slot
features (:mod:`orgteams.envs.highlevel.slots`); ``info[agent]["ticks_elapsed"]`` is
the round's length in ticks, for SMDP discounting (``gamma ** ticks_elapsed``).

Extras beyond the PettingZoo API: :meth:`HighLevelEnv.load_state` starts from a
given world state; ``on_tick(before, joint_actions, after, infos)`` is called after
every tick when set (demonstrations, profilers), and :meth:`HighLevelEnv.step` takes
one more ``on_tick`` and a ``should_stop`` for that step alone (the round loop's);
``nav`` is the layout's :class:`~orgteams.envs.core.navigation.Navigator`. What the
team layers read of the household underneath is offered here too (``world``, ``task``,
``agent_index``, ``describe``, ``describe_goal``, ``progress``, ``overlay``,
``display_names``, ``render_fps``), so code above ``envs`` never reaches into ``base``.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from orgteams.envs.core.navigation import Navigator
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.core.tasks import TaskSpec
from orgteams.envs.highlevel.crowding import Crowd
from orgteams.envs.highlevel.plans import PLAN_TICK_LIMIT, PLANS, STUCK_LIMIT, PlanFailed, Runner
from orgteams.envs.highlevel.slots import OptionSlots, slot_features
from orgteams.envs.highlevel.space import PRIMITIVE, ActionId, AvailableActions
from orgteams.envs.household import HouseholdEnv
from orgteams.envs.observe.memory import AgentMemory, Notes, Sight, Views, update_all
from orgteams.envs.render.overlay import Overlay
from orgteams.errors import did_you_mean

KINDS = ("explore", "goto", "check", "grab", "put", "wait", "continue", "primitive")
LABELS = {"explore": "goexplore", "goto": "goto", "check": "gocheck", "grab": "gograb",
          "put": "goput", "wait": "wait", "continue": "continue", "primitive": "primitive"}
STATUSES = ("running", "done", "failed", "idle")
ACTION_MODES = ("text", "discrete")


@dataclass(frozen=True)
class HighLevelAction:
    """One high-level action; ``id`` is what agents send to :meth:`HighLevelEnv.step`."""

    id: ActionId
    kind: str
    target: str
    label: str

    @classmethod
    @functools.lru_cache(maxsize=4096)  # noqa: B019 - immutable values, bounded cache
    def make(cls, kind: str, target: str = "") -> HighLevelAction:
        ident = ActionId.of(kind, target)
        label = f"[{LABELS[kind]}] <{target}>" if target else f"[{LABELS[kind]}]"
        return cls(ident, kind, target, label)


class HighLevelEnv(ParallelEnv):
    """Decision rounds of high-level actions over a :class:`HouseholdEnv`."""

    metadata = {"name": "household_highlevel_v0", "render_modes": ["human", "rgb_array", "ansi"],
                "is_parallelizable": True}

    def __init__(self, base: HouseholdEnv | None = None, action_mode: str = "text",
                 observations: bool = True, **household_kwargs: Any):
        """``base``: the household to play (else one built from ``household_kwargs``,
        text observations by default). ``observations=False``: ``reset`` and ``step``
        return None per agent instead of this env's observations (a caller that
        builds its own, e.g. the single-agent env's learner, from any ``obs_mode``)."""
        if base is not None and household_kwargs:
            raise ValueError("pass either base= or HouseholdEnv keyword arguments, not both")
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        if base is None:
            household_kwargs.setdefault("obs_mode", "text")
            base = HouseholdEnv(**household_kwargs)
        if observations and base.obs_mode not in ("text", "array"):
            raise ValueError(f"HighLevelEnv observes 'text' or 'array' (per-slot features), "
                             f"got obs_mode={base.obs_mode!r}")
        self.base = base
        self.action_mode = action_mode
        self.observations = bool(observations)
        self.slots = OptionSlots(base.layout, base.task)
        self._slot_ids: list[str | None] = []
        # Observations are built here, once per decision round (_observations), so the
        # base env skips its own on every tick (its step() returns None per agent).
        base.observations = False
        # The rounds' infos gather every tick's events (and the team layers read them).
        base.rich_infos = True
        self.possible_agents = list(base.possible_agents)
        self.agents: list[str] = []
        self.render_mode = base.render_mode
        if base.obs_mode == "array" and observations:
            self._obs_space = self.slots.observation_space(base.observation_space(
                self.possible_agents[0]))
        else:
            self._obs_space = spaces.Text(base.text_length, charset=string.printable)
        if action_mode == "discrete":
            slot_space = spaces.Discrete(self.slots.n)
            self._act_spaces = {a: slot_space for a in self.possible_agents}
        else:  # per agent: samples and accepts the ids that agent may choose now
            self._act_spaces = {a: AvailableActions(self, a) for a in self.possible_agents}
        self.nav: Navigator | None = None  # the layout's shortest paths, from reset() on
        self._memories: dict[str, AgentMemory] = {}
        self._views: Views | None = None  # the scene's views, as the memories read them
        self._runners: dict[str, Runner] = {}
        # agent -> [its memory, memory version, scene, running, actions, by id]: a round
        # asks for an agent's actions several times (members, the loop, step's check)
        self._available: dict[str, tuple] = {}
        self._room_actions: tuple | None = None  # (rooms, their explore and goto actions)
        self.crowd = Crowd(self)  # who gives way to whom (crowding.py)
        self.ticks = 0
        self.rounds = 0
        # Called after every tick as on_tick(before, joint_actions, after, events):
        # demonstrations and profilers hook in here.
        self.on_tick: Callable[..., None] | None = None
        # Asked after every tick; True ends this step early (a team runner that was
        # asked to stop, e.g. its window was closed).
        self.should_stop: Callable[[], bool] | None = None

    # ---- PettingZoo API ----
    def observation_space(self, agent: str) -> spaces.Space:
        """``agent``'s observation space (the same for every agent)."""
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        """``agent``'s ``Text`` space of action ids; ``sample()`` draws one of its available
        actions.
        """
        return self._act_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Starts an episode (PettingZoo's ``reset``); returns observations and infos."""
        self.base.reset(seed=seed, options=options)
        return self._start_episode()

    def load_state(self, state: HouseholdState):
        """Start an episode from a given world state (tests, replays); returns reset()'s pair.

        The state's scene must have this env's number of agents.
        """
        if len(state.agent_pos) != len(self.possible_agents):
            raise ValueError(f"state has {len(state.agent_pos)} agents, env has "
                             f"{len(self.possible_agents)}")
        return self.reset(options={"state": state})

    def _start_episode(self):
        world = self.base.world
        if self.nav is None or self.nav.layout is not world.scene.layout:
            self.nav = Navigator(world.scene.layout)  # this env's, kept across its episodes
        self.agents = list(self.base.agents)
        index = {a: i for i, a in enumerate(self.possible_agents)}  # one for the team
        notes = Notes(world.scene, index)  # one for the team too: what notes are checked
        self._memories = {a: AgentMemory(world.scene, i, self.possible_agents, index, notes)
                          for i, a in enumerate(self.possible_agents)}
        # one Views an episode, one Sight a tick, for all the team's memories (memory.py)
        self._views = Views(world.scene, self.possible_agents)
        update_all(self._memories.values(), world, Sight(world, self._views))
        self._runners = {a: Runner() for a in self.possible_agents}
        self._available.clear()
        self.crowd.reset()
        self._slot_ids = self.slots.ids(world.scene.objects)
        self.ticks = 0
        self.rounds = 0
        events = {a: [] for a in self.agents}
        return self._observations(), {a: self._info(a, 0, events[a]) for a in self.agents}

    def step(self, actions: dict[str, ActionId], *,
             on_tick: Callable[[HouseholdState, dict[str, int], HouseholdState, dict], None]
             | None = None, should_stop: Callable[[], bool] | None = None,
             observe: bool = True):
        """One decision round (see the module docstring).

        Args:
            actions: Agent id -> :class:`ActionId` (a plain ``str`` id too; or a
                :class:`HighLevelAction`, or an option slot under ``action_mode="discrete"``).
            on_tick: Called after every tick of this step, after the env's own
                ``on_tick``, as ``on_tick(before, joint_actions, after, infos)``.
            should_stop: Asked after every tick of this step instead of the env's own
                ``should_stop``; True ends the step early.
            observe: False: skip what only an observer reads, for a caller that reads
                neither (the round loop, whose members read a ``MemberView``): None per
                agent instead of the observations, and infos without ``available`` and
                ``action_mask`` (at 256 agents they cost more than the tick itself).
        """
        if should_stop is None:
            should_stop = self.should_stop
        if self.base.world is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("the episode is over; call reset() to start a new one")
        chosen = self._validate(actions)
        # New plans take their first step on the world as it is, as the tick's plans
        # do: under the crowd's view of it (256 agents starting plans would each ask
        # every teammate otherwise)
        self.crowd.plans_start()
        try:
            for agent, action in chosen.items():
                self._start(agent, action)
                self.crowd.advanced(agent)
            for agent in self.agents:
                r = self._runners[agent]
                if not r.idle and r.status != "running" and agent not in chosen:
                    self._start(agent, HighLevelAction.make("wait"))
                    self.crowd.advanced(agent)
        finally:
            self.crowd.plans_end()
        self.rounds += 1
        events: dict[str, list[dict]] = {a: [] for a in self.agents}
        total_reward, elapsed = 0.0, 0
        terms = truncs = {a: False for a in self.agents}
        live = [a for a in self.agents if not self._runners[a].idle]
        runners = self._runners
        while True:
            before = self.base.world
            joint = {}
            for a in self.agents:  # a loop, not a generator in a comprehension: 256 agents
                r = runners[a]
                joint[a] = r.pending if r.status == "running" and not r.idle else 0
            self.crowd.before_tick(joint)
            _, rew, terms, truncs, infos = self.base.step(joint)
            elapsed += 1
            total_reward += next(iter(rew.values()), 0.0)
            world = self.base.world
            for a, info in infos.items():
                if info["events"]:  # most of 256 agents have none this tick
                    events[a].extend(dict(e, tick=world.tick) for e in info["events"])
            if self.on_tick is not None:
                self.on_tick(before, joint, world, infos)
            if on_tick is not None:
                on_tick(before, joint, world, infos)
            update_all(self._memories.values(), world, Sight(world, self._views))
            self.crowd.plans_start()
            try:
                for a in live:
                    r = self._runners[a]
                    if r.status == "running":
                        r.advance()
                        if r.status != "running":
                            # the crowd's view reads a runner's status (and its action and
                            # idleness, which a step leaves as they were): one still
                            # running reads as before, so 256 walkers tell it nothing
                            self.crowd.advanced(a)
            finally:
                self.crowd.plans_end()
            if not self.base.agents or not live:
                break
            if should_stop is not None and should_stop():
                break
            if any(self._runners[a].status != "running" for a in live):
                break
        self.ticks = self.base.world.tick
        agents = list(self.agents)
        if not self.base.agents:
            self.agents = []
        if observe:
            obs = self._observations(agents)
            infos = {a: self._info(a, elapsed, events[a]) for a in agents}
        else:
            obs = dict.fromkeys(agents)
            infos = self._round_infos(agents, elapsed, events)
        return (obs, {a: total_reward for a in agents}, dict(terms), dict(truncs), infos)

    def render(self):
        """Renders the wrapped env (its ``render_mode``)."""
        return self.base.render()

    def close(self):
        """Closes the wrapped env (and its window)."""
        self.base.close()

    # ---- the household underneath, as the layers above read it ----
    @property
    def world(self) -> HouseholdState | None:
        """The current world state (replaced every tick; None before ``reset``)."""
        return self.base.world

    @property
    def task(self) -> TaskSpec:
        """The household's task (candidates, units, step limits)."""
        return self.base.task

    @property
    def agent_index(self) -> dict[str, int]:
        """Agent id -> index in the world's per-agent lists (do not mutate)."""
        return self.base.agent_index

    @property
    def overlay(self) -> Overlay:
        """What the renderers draw over the world (messages, markers, captions, roles)."""
        return self.base.overlay

    @property
    def display_names(self) -> list[str] | None:
        """Agent labels in the window and in text views (None: the agent ids)."""
        return self.base.display_names

    @display_names.setter
    def display_names(self, names: list[str] | None) -> None:
        self.base.display_names = None if names is None else list(names)

    @property
    def render_fps(self) -> int:
        """Ticks per second of the window and of recorded videos."""
        return self.base.render_fps

    def describe(self, agent: str) -> str:
        """What ``agent`` sees now, as text."""
        return self.base.describe(agent)

    def describe_goal(self) -> str:
        """The goal, as text."""
        return self.base.describe_goal()

    def progress(self) -> dict[str, Any]:
        """Goal predicates satisfied and remaining, and units done of the total."""
        return self.base.progress()

    # ---- queries ----
    def memory(self, agent: str) -> AgentMemory:
        """What ``agent`` remembers of the house (rooms, containers and objects seen)."""
        return self._memories[agent]

    def needs_decision(self, agent: str) -> bool:
        """Whether ``agent`` must choose a new high-level action before the next step.

        Raises:
            ValueError: ``agent`` is not one of the env's agents.
        """
        r = self._runners.get(agent)
        if r is None:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
        return bool(self.agents) and not r.idle and r.status != "running"

    def current(self, agent: str) -> HighLevelAction | None:
        """The high-level action ``agent`` is carrying out, or None when it has none running."""
        r = self._runners[agent]
        return r.action if r.status == "running" else None

    def set_idle(self, agent: str, idle: bool, *, obstacle: bool = True) -> None:
        """An idle agent waits every tick and never needs a decision.

        ``obstacle=True`` (the default) makes it a fixed obstacle that teammates walk
        around or are blocked by; ``obstacle=False`` lets them push it aside like a
        waiting agent (a removed team member must not seal a doorway or corridor).
        """
        r = self._runners[agent]
        r.idle, r.obstacle = idle, obstacle
        r.plan, r.action, r.pending, r.status, r.failure_reason = None, None, 0, "idle", ""
        self.crowd.release(agent)

    def available_actions(self, agent: str) -> list[HighLevelAction]:
        """The actions ``agent`` may choose now, derived only from its memory."""
        return list(self._known_available(agent)[4])

    def is_available(self, agent: str, action: str) -> bool:
        """Whether ``action`` (an id) is one of :meth:`available_actions` of ``agent``."""
        if not isinstance(action, str):
            return action in self._available_by_id(agent)
        # The one id is looked up in the memory by the rules _available_now lists them
        # by: the round loop asks this of every decider, whose memory changed since the
        # last tick, and listing its actions (about 100) to find one cost more.
        mem = self._memories[agent]
        kind, _, target = action.partition(":")
        if not target:
            return action == "wait" or (action == "continue"
                                        and self._runners[agent].status == "running")
        if kind == "explore" or kind == "goto":
            return target in mem.rooms
        if kind == "check" or kind == "put":
            seen = mem.furniture.get(target)
            return seen is not None and (seen.is_container if kind == "check" else bool(mem.held))
        if kind == "grab":
            belief = mem.objects.get(target)
            return belief is not None and belief.kind == "furniture" \
                and target in self.base.world.scene.objects
        return False

    def _known_available(self, agent: str) -> list:
        """``[memory, its version, scene, running, actions, actions by id or None]``
        of ``agent``, kept until one of the first four changes."""
        mem = self._memories[agent]
        scene, running = self.base.world.scene, self._runners[agent].status == "running"
        known = self._available.get(agent)
        if known is not None and known[0] is mem and known[1] == mem.version \
                and known[2] is scene and known[3] == running:
            return known  # nothing it depends on changed since
        known = self._available[agent] = [mem, mem.version, scene, running,
                                          self._available_now(agent, mem), None]
        return known

    def _available_by_id(self, agent: str) -> dict[str, HighLevelAction]:
        """:meth:`available_actions` by id, in their order (do not mutate)."""
        known = self._known_available(agent)
        if known[5] is None:
            known[5] = {a.id: a for a in known[4]}
        return known[5]

    def _available_now(self, agent: str, mem: AgentMemory) -> list[HighLevelAction]:
        make = HighLevelAction.make
        rooms = self._room_actions  # every agent's first ones: the floor plan's rooms
        if rooms is None or rooms[0] != mem.rooms:
            rooms = self._room_actions = (mem.rooms, [make("explore", r) for r in mem.rooms]
                                          + [make("goto", r) for r in mem.rooms])
        out = list(rooms[1])
        seen = mem.furniture
        furn = [f.name for f in self.base.world.scene.layout.furniture if f.name in seen]
        out += [make("check", f) for f in furn if seen[f].is_container]
        for obj in self.base.world.scene.objects:
            belief = mem.objects.get(obj)
            if belief is not None and belief.kind == "furniture":
                out.append(make("grab", obj))
        if mem.held:
            out += [make("put", f) for f in furn]
        out.append(make("wait"))
        if self._runners[agent].status == "running":
            out.append(make("continue"))
        return out

    # ---- internals: choosing and running plans ----
    def _validate(self, actions: dict[str, str]) -> dict[str, HighLevelAction]:
        chosen = {}
        live = set(self.agents)  # not the list: 256 agents each looked up in 256
        for agent, ident in actions.items():
            if agent not in self._runners:
                raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
            if agent not in live:
                continue
            if isinstance(ident, str):
                pass  # an id, as agents send them: 256 a tick, the checks below cost more
            elif isinstance(ident, HighLevelAction):
                ident = ident.id
            elif isinstance(ident, int | np.integer | np.ndarray) and not isinstance(ident, bool):
                ident = self._slot_id(agent, ident)
            if self._runners[agent].idle and ident in ("continue", "wait", None):
                continue
            if isinstance(ident, str) and ident.startswith(PRIMITIVE):
                chosen[agent] = self._primitive(agent, ident)
                continue
            if not self.is_available(agent, ident):
                available = self._available_by_id(agent)
                raise ValueError(
                    f"{agent}: unknown or unavailable action {ident!r}."
                    f"{did_you_mean(str(ident), available)} Valid ids for {agent}: "
                    f"{', '.join(available)}")
            if ident != "continue":
                kind, _, target = ident.partition(":")
                chosen[agent] = HighLevelAction.make(kind, target)
        return chosen

    def _slot_id(self, agent: str, slot: Any) -> str:
        """The action id of an option slot (``action_mode="discrete"``)."""
        if isinstance(slot, np.ndarray):
            if slot.shape != ():
                raise ValueError(f"{agent}: option slot must be one integer, got shape "
                                 f"{slot.shape}")
            slot = slot.item()
        if self.action_mode != "discrete":
            raise ValueError(f"{agent}: integer action {slot!r} needs "
                             "HighLevelEnv(action_mode='discrete'); this env takes action ids")
        if not 0 <= slot < self.slots.n:
            raise ValueError(f"{agent}: option slot {slot} is outside Discrete({self.slots.n})")
        ident = self._slot_ids[slot]
        if ident is None:
            raise ValueError(f"{agent}: option slot {slot} (grab slot "
                             f"{slot - self.slots.grab_base}) has no object this episode")
        return ident

    def action_mask(self, agent: str) -> np.ndarray:
        """int8 per option slot: 1 where its action is available to ``agent`` now."""
        available = {a.id for a in self.available_actions(agent)}
        return np.array([i in available for i in self._slot_ids], np.int8)

    def _primitive(self, agent: str, ident: str) -> HighLevelAction:
        n = self.base.action_space(agent).n
        target = ident[len(PRIMITIVE):]
        if not (target.isascii() and target.isdigit() and int(target) < n):
            raise ValueError(f"{agent}: bad primitive action {ident!r}: expected "
                             f"'primitive:<id>' with an integer id from 0 to {n - 1} "
                             "(see orgteams.envs.core.actions)")
        return HighLevelAction.make("primitive", str(int(target)))

    def _start(self, agent: str, action: HighLevelAction) -> None:
        r = self._runners[agent]
        if r.idle:
            raise ValueError(f"{agent} is idle: set_idle({agent!r}, False) before giving it "
                             f"{action.id!r}")
        r.action, r.status, r.failure_reason, r.ticks = action, "running", "", 0
        r.plan = PLANS[action.kind](self, agent, action.target)
        r.advance()

    def _info(self, agent: str, elapsed: int, events: list[dict], observe: bool = True) -> dict:
        r = self._runners[agent]
        info = {"needs_decision": self.needs_decision(agent), "status": r.status,
                "failure_reason": r.failure_reason, "ticks_elapsed": elapsed,
                "events": events}
        if observe:
            info["available"] = available = self.available_actions(agent)
        info["current"] = self.current(agent)
        info["is_success"] = self.base.world.success
        if observe and self.action_mode == "discrete":
            ids = {a.id for a in available}
            info["action_mask"] = np.array([i in ids for i in self._slot_ids], np.int8)
        return info

    def _round_infos(self, agents: list[str], elapsed: int, events: dict[str, list[dict]]
                     ) -> dict[str, dict]:
        """``_info(a, elapsed, events[a], observe=False)`` of each of ``agents``, in one
        loop (256 agents a round; the same keys in the same order)."""
        live, success, runners = bool(self.agents), self.base.world.success, self._runners
        infos = {}
        for a in agents:
            r = runners[a]
            status = r.status
            running = status == "running"
            infos[a] = {"needs_decision": live and not r.idle and not running, "status": status,
                        "failure_reason": r.failure_reason, "ticks_elapsed": elapsed,
                        "events": events[a], "current": r.action if running else None,
                        "is_success": success}
        return infos

    def _observations(self, agents: list[str] | None = None) -> dict[str, Any]:
        agents = self.agents if agents is None else agents
        if not self.observations:
            return dict.fromkeys(agents)
        if self.base.obs_mode == "text":
            return {a: self.base.describe(a) for a in agents}
        world, out = self.base.world, {}
        for a in agents:
            base = self.base._observer.observe(world, self.base.agent_index[a])
            ids = {x.id for x in self.available_actions(a)}
            out[a] = {"slots": slot_features(self, a, self._slot_ids, ids),
                      "hands": base["hands"], "goal": base["goal"]}
        return out


__all__ = ["ActionId", "HighLevelAction", "HighLevelEnv", "KINDS", "PLAN_TICK_LIMIT", "PRIMITIVE",
           "PlanFailed", "STATUSES", "STUCK_LIMIT"]
